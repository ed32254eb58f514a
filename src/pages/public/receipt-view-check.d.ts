/** Types of receipt-view-check.js (plain JavaScript: it is bundled into the browser's check.js). */

export type SignedField = "event_id" | "action" | "seq" | "hash" | "valid";
export declare const SIGNED_FIELDS: SignedField[];

export type Stage =
  | { state: "skip"; why: string }
  | { state: "fail"; reason?: string; fields?: SignedField[]; missing?: boolean }
  | { state: "pass"; kid?: string; origin?: string; treeSize?: number; index?: number; signedOnly?: boolean };

export interface ReceiptPageCheck {
  /** The receipt as parsed, or null when the text is not strict JSON. */
  receipt: Record<string, any> | null;
  outcome: "verified" | "partial" | "failed";
  signature: Stage;
  checkpoint: Stage;
  inclusion: Stage;
  page: Stage;
}

export declare function checkReceiptPage(
  text: string,
  keys: Array<{ kid: string | null; x: string }>,
  shown: Partial<Record<SignedField, string>>,
): Promise<ReceiptPageCheck>;
