import { scratchEncoder } from "../../../src/lib/scratch-encoder";

const encoder = new TextEncoder();

/**
 * The cryptography of issue 21's loop, chained as the ledger chains: SHA-256
 * of prev_hash + payload, an HMAC-SHA256 of the payload, and the RFC 6962 leaf
 * hash verify compares with the transparency log (SHA-256 of 0x00 || hash
 * bytes); and, apart, the commitment digest verify also makes. The crypto loop
 * and the verify floor both run it, so the floor is exactly the loop's work
 * plus reading the rows (and, in its second walk, the commitments).
 */
export class CryptoChain {
  prev = "0".repeat(64);
  private leaf = new Uint8Array(33);
  private scratch = scratchEncoder();
  private constructor(private readonly key: CryptoKey) {}

  static async create(): Promise<CryptoChain> {
    const key = await crypto.subtle.importKey("raw", encoder.encode("baseline-signing-key-0123456789"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return new CryptoChain(key);
  }

  async step(payload: string): Promise<void> {
    const digest = await crypto.subtle.digest("SHA-256", encoder.encode(this.prev + payload));
    await crypto.subtle.sign("HMAC", this.key, encoder.encode(payload));
    await this.advance(digest);
  }

  /**
   * The loop's step and the fourth digest verify makes of every row that still holds its personal
   * data, which the loop leaves out: SHA-256 of the row's salt and that data (the pii_commitment its
   * payload carries). Issued as verify issues them, the fastest way found for Web Crypto here: every
   * text encoded once into one reused buffer (Witness's scratchEncoder), the three independent
   * digests under one await.
   */
  async stepWithCommitment(payload: string, salt: string, personalData: string): Promise<void> {
    const offset = this.scratch.encodeAt(this.prev, 0);
    const end = this.scratch.encodeAt(payload, offset);
    const piiEnd = this.scratch.encodeAt(personalData, this.scratch.encodeAt(salt, end));
    const [digest] = await Promise.all([
      crypto.subtle.digest("SHA-256", this.scratch.bytes(0, end)),
      crypto.subtle.sign("HMAC", this.key, this.scratch.bytes(offset, end)),
      crypto.subtle.digest("SHA-256", this.scratch.bytes(end, piiEnd)),
    ]);
    await this.advance(digest);
  }

  /**
   * The row just hashed becomes the next row's prev (hex); returns its leaf hash under way. Not
   * async: the loop awaits exactly what it awaited before this was shared.
   */
  private advance(digest: ArrayBuffer): Promise<ArrayBuffer> {
    this.leaf.set(new Uint8Array(digest), 1);
    this.prev = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    return crypto.subtle.digest("SHA-256", this.leaf);
  }
}
