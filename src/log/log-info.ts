import type { Head } from "../chain/chain-check";
import { base64Encode } from "../tlog/encoding.ts";
import { logSigner, logVkey } from "./log-identity.ts";
import type { BuildState } from "./log-store.ts";
import type { ProjectLog } from "./project-log.ts";

/** GET /v1/log's answer, minus public_url (the route knows the base). */
export interface LogInfo {
  log_id: string;
  origin: string;
  vkey: string | null;
  /** Size and base64 root of the published tree (what the checkpoint signs). */
  tree_size: number;
  root_hash: string;
  checkpoint: string | null;
  status: BuildState["status"];
  /** Leaves built so far and the chain's length: equal when ready. */
  built_size: number;
  head_seq: number;
  blocked: BuildState["blocked"] | null;
}

export async function logInfo(log: ProjectLog, env: Env, head: Head): Promise<LogInfo> {
  const origin = await log.origin();
  const signer = await logSigner(env, origin);
  const size = log.publishedSize;
  const cp = await log.checkpoint(size);
  return {
    log_id: await log.logId(),
    origin,
    vkey: signer ? await logVkey(signer) : null,
    tree_size: size,
    root_hash: base64Encode(cp?.checkpoint.rootHash ?? (await log.root(size))),
    checkpoint: cp?.text ?? null,
    status: log.status,
    built_size: log.size,
    head_seq: head.seq,
    blocked: log.build.blocked ?? null,
  };
}
