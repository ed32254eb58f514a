import { z } from "zod";

/** A tree size as C2SP spells one: decimal, no sign, no leading zeros, within JS integer precision. */
const treeSize = (name: string) =>
  z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string(`${name} must be given once`)
      .regex(/^(?:0|[1-9][0-9]{0,14})$/, `${name} must be a tree size: a non-negative integer without leading zeros`)
      .transform(Number),
  );

/** GET /v1/log/consistency: from a size to another (default: the newest). */
export const consistencyQuery = z
  .object({
    from: treeSize("from").meta({ description: "The older tree size", example: "0" }),
    to: treeSize("to").optional().meta({ description: "The newer tree size; default: the newest published one" }),
  })
  .refine((q) => q.to === undefined || q.from <= q.to, { message: "from must not be greater than to", path: ["from"] });

// Answers of GET /v1/log, its consistency proofs and GET /v1/events/{id}/proof: every field declared.
const nullableString = z.string().nullable();

const logStatusSchema = z
  .enum(["ready", "building", "blocked"])
  .meta({ description: "ready: every event is in the tree; building: the backfill is catching up; blocked: the chain in D1 is incomplete or altered, see blocked" });

export const logInfoSchema = z
  .object({
    data: z.object({
      log_id: z.string().meta({ description: "32 hex digits: the log's public address is /logs/<log_id>" }),
      origin: z.string().meta({ description: "The checkpoint origin line: <LOG_ORIGIN_HOST>/logs/<log_id>" }),
      vkey: nullableString.meta({ description: "The checkpoint verifier key (note vkey); null without a receipt signing key" }),
      public_url: z.string(),
      tree_size: z.int().meta({ description: "Size of the published tree, the one the checkpoint signs" }),
      root_hash: z.string().meta({ description: "base64 root of the published tree" }),
      checkpoint: nullableString.meta({ description: "The signed checkpoint note; null without a signing key" }),
      status: logStatusSchema,
      built_size: z.int().meta({ description: "Leaves built so far" }),
      head_seq: z.int().meta({ description: "The chain's length; equal to built_size when ready" }),
      blocked: z
        .object({ seq: z.int(), reason: z.enum(["missing", "chain_broken", "hash_mismatch", "head_mismatch"]) })
        .nullable()
        .meta({ description: "Where and why the build stopped (status blocked); null otherwise" }),
    }),
  })
  .meta({ id: "LogInfo" });

export const logProofSchema = z
  .object({
    data: z.object({
      index: z.int().meta({ description: "The event's leaf index (seq - 1)" }),
      tree_size: z.int().meta({ description: "Size of the tree the proof is against (the newest checkpoint's)" }),
      proof: z.string().meta({ description: "c2sp.org/tlog-proof@v1 text: index, proof hashes and the signed checkpoint" }),
    }),
  })
  .meta({ id: "LogInclusionProof", description: "An event's inclusion proof against the newest checkpoint." });

export const logConsistencySchema = z
  .object({
    data: z.object({
      from: z.int(),
      to: z.int(),
      proof: z.array(z.string()).meta({ description: "RFC 6962 consistency proof: base64 hashes" }),
    }),
  })
  .meta({ id: "LogConsistencyProof", description: "A consistency proof between two published tree sizes." });
