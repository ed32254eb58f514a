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

  /**
   * The fourth digest verify makes of every row that still holds its personal data and the loop
   * leaves out: SHA-256 of the row's salt and that data (the pii_commitment the payload carries).
   */
  async commitment(salt: string, personalData: string): Promise<void> {
    await crypto.subtle.digest("SHA-256", encoder.encode(salt + personalData));
  }
}
