import { z } from "zod";
import { MAX_ACTIONS_PAGE } from "../reads/rollups";
import { limitParam, optional } from "./list-query";

const DEFAULT_ACTIONS_PAGE = 100;
const MAX_PREFIX = 200;

/** nextCursor: the last action of a page, opaque to clients. */
export function encodeActionCursor(action: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(action))).replace(/=+$/, "");
}

function decodeActionCursor(cursor: string): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(atob(cursor), (ch) => ch.charCodeAt(0)));
  } catch {
    return null;
  }
}

/** The cursor of a page in action order (actions, schemas): decoded to the last action of the page before. */
export const actionCursorParam = () =>
  optional(
    z.string("cursor must be given once").transform((v, ctx) => {
      const after = decodeActionCursor(v);
      if (after === null) {
        ctx.addIssue({ code: "custom", message: "cursor must be a nextCursor from an earlier page" });
        return z.NEVER;
      }
      return after;
    }),
  ).meta({ description: "nextCursor from the previous page" });

/** GET /v1/actions. */
export const actionsQuery = z.object({
  prefix: optional(z.string("prefix must be given once").max(MAX_PREFIX, `prefix must be at most ${MAX_PREFIX} characters`))
    .transform((v) => v ?? "")
    .meta({ description: "Only actions starting with this text (for example `member.`)" }),
  limit: limitParam(MAX_ACTIONS_PAGE, DEFAULT_ACTIONS_PAGE, "Actions"),
  cursor: actionCursorParam(),
});

export const actionPageSchema = z
  .object({
    data: z.array(
      z.object({
        action: z.string(),
        count: z.int().meta({ description: "Events recorded with this action (committed; later purges and erasures do not uncount them)" }),
        first_seen: z.string().meta({ description: "Start of the first hour (of occurred_at, UTC) holding the action" }),
        last_seen: z.string().meta({ description: "End of the last hour (of occurred_at, UTC) holding the action" }),
        schema_version: z.int().nullable().meta({ description: "The newest version of the action's catalog schema (GET /v1/schemas/{action}); null when it has none" }),
      }),
    ),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: "ActionPage" });
