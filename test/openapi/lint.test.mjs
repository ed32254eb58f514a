// The committed OpenAPI document (src/client/openapi.json), linted as other tools will read it:
// Redocly's recommended-strict ruleset (every rule an error) plus the checks that catch a document
// that lies: examples that their schemas refuse, ambiguous paths, unused components. Node, not
// workerd (Redocly needs the file system): npm run test:scripts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";

const PATH = new URL("../../src/client/openapi.json", import.meta.url).pathname;
const RULES = {
  "no-ambiguous-paths": "error",
  "no-invalid-schema-examples": "error",
  "no-invalid-parameter-examples": "error",
  "no-invalid-media-type-examples": "error",
  "no-unused-components": "error",
  "no-required-schema-properties-undefined": "error",
  "no-schema-type-mismatch": "error",
  "no-enum-type-mismatch": "error",
};

async function lint(source) {
  const config = await createConfig({ extends: ["recommended-strict"], rules: RULES });
  const problems = await lintFromString({ source, absoluteRef: PATH, config });
  return problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location?.[0]?.pointer ?? ""})`);
}

describe("the OpenAPI document", () => {
  it("has no problem under Redocly's recommended-strict rules", async () => {
    assert.deepEqual(await lint(readFileSync(PATH, "utf8")), []);
  });

  it("the linter's rules do run: a broken copy is refused, rule by rule", async () => {
    const doc = JSON.parse(readFileSync(PATH, "utf8"));
    // A path parameter no operation declares, as one holding slashes once was, and an example its schema refuses.
    const tile = doc.paths["/logs/{logId}/tile/{level}/{index}"].get;
    doc.paths["/logs/{logId}/tile/{tile}"] = { get: { ...tile, operationId: "brokenTile" } };
    const index = tile.parameters.find((p) => p.name === "index");
    index.schema = { ...index.schema, example: "0000" };
    delete doc.paths["/v1/log"].get.summary;
    const problems = await lint(JSON.stringify(doc));
    const rules = new Set(problems.map((p) => p.split(":")[0]));
    for (const rule of ["error path-parameters-defined", "error no-invalid-schema-examples", "error operation-summary"]) {
      assert.ok(rules.has(rule), `${rule} not reported; got:\n${problems.join("\n")}`);
    }
  });
});
