const encoder = new TextEncoder();

/**
 * Only the cryptography verify needs per event, chained as the ledger chains:
 * SHA-256 of prev_hash + payload, an HMAC-SHA256 of the payload, and the
 * RFC 6962 leaf hash verify compares with the transparency log (SHA-256 of
 * 0x00 || hash bytes). The crypto loop and the verify floor both run it, so
 * the floor is exactly the loop's work plus reading the rows.
 */
export class CryptoChain {
  prev = "0".repeat(64);
  private leaf = new Uint8Array(33);
  private constructor(private readonly key: CryptoKey) {}

  static async create(): Promise<CryptoChain> {
    const key = await crypto.subtle.importKey("raw", encoder.encode("baseline-signing-key-0123456789"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return new CryptoChain(key);
  }

  async step(payload: string): Promise<void> {
    const digest = await crypto.subtle.digest("SHA-256", encoder.encode(this.prev + payload));
    await crypto.subtle.sign("HMAC", this.key, encoder.encode(payload));
    this.leaf.set(new Uint8Array(digest), 1);
    await crypto.subtle.digest("SHA-256", this.leaf);
    this.prev = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
}
