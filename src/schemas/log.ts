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
  .object({ from: treeSize("from"), to: treeSize("to").optional() })
  .refine((q) => q.to === undefined || q.from <= q.to, { message: "from must not be greater than to", path: ["from"] });
