import { z } from "zod";
import { timestampParam } from "./list-query";

const bound = (name: string) => timestampParam(name);

/** GET /v1/events/verify: an optional window on occurred_at, both ends inclusive; or since=checkpoint (incremental, no window). */
export const verifyQuery = z
  .object({
    from: bound("from"),
    to: bound("to"),
    since: z
      .enum(["checkpoint"], "since must be \"checkpoint\"")
      .optional()
      .meta({ description: "checkpoint: check only the events recorded since the last whole-history verify that came out ok (see the docs)" }),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: "from must not be after to", path: ["from"] })
  .refine((q) => !q.since || (!q.from && !q.to), { message: "since cannot be combined with from or to", path: ["since"] });
