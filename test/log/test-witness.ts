/** A C2SP tlog-witness played by the tests: add-checkpoint with its checks, state per origin, cosignatures. */
import { verifyCheckpoint } from "../../src/tlog/checkpoint";
import { type CosignerSigner, cosignatureLine, createCosigner, formatCosignerVkey, parseAddCheckpoint } from "../../src/tlog/cosignature";
import { bytesEqual } from "../../src/tlog/encoding";
import { parseNote } from "../../src/tlog/note";
import { verifyConsistency } from "../../src/tlog/proofs";

export class TestWitness {
  /** Latest cosigned (size, root) per log origin, as a witness must keep it. */
  readonly latest = new Map<string, { size: number; root: Uint8Array }>();
  readonly requests: string[] = [];

  private constructor(
    readonly name: string,
    readonly vkey: string,
    private readonly signer: CosignerSigner,
    private readonly logVkeys: Map<string, string>,
  ) {}

  static async create(name: string, logVkeys: string[]): Promise<TestWitness> {
    const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
    const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
    const origins = new Map(logVkeys.map((v) => [v.slice(0, v.indexOf("+")), v]));
    return new TestWitness(name, await formatCosignerVkey(name, pub), await createCosigner(name, pair.privateKey, pub), origins);
  }

  readonly fetch: typeof fetch = async (input, init) => this.handle(new Request(input, init));

  private async handle(req: Request): Promise<Response> {
    if (req.method !== "POST" || !req.url.endsWith("/add-checkpoint")) return new Response("not found\n", { status: 404 });
    const text = await req.text();
    this.requests.push(text);
    let add;
    try {
      add = parseAddCheckpoint(text);
    } catch {
      return new Response("bad request\n", { status: 400 });
    }
    const origin = parseNote(add.checkpoint).text.split("\n")[0];
    const vkey = this.logVkeys.get(origin);
    if (!vkey) return new Response("unknown log\n", { status: 404 });
    const cp = await verifyCheckpoint(add.checkpoint, vkey);
    if (!cp.ok) return new Response("bad signature\n", { status: 403 });
    const { size, rootHash } = cp.checkpoint;
    if (add.oldSize > size) return new Response("old size beyond checkpoint\n", { status: 400 });
    const latest = this.latest.get(origin) ?? { size: 0, root: new Uint8Array(32) };
    const conflict = () => new Response(`${latest.size}\n`, { status: 409, headers: { "Content-Type": "text/x.tlog.size" } });
    if (add.oldSize !== latest.size) return conflict();
    if (add.oldSize === size) {
      if (!bytesEqual(latest.root, rootHash)) return new Response("different root for the same size\n", { status: 409 });
    } else if (add.oldSize === 0 ? add.proof.length !== 0 : !(await verifyConsistency(add.oldSize, size, add.proof, latest.root, rootHash))) {
      return new Response("inconsistent\n", { status: 422 });
    }
    this.latest.set(origin, { size, root: rootHash });
    return new Response(await cosignatureLine(this.signer, cp.text, Math.floor(Date.now() / 1000)), { status: 200 });
  }
}
