import { describe, expect, it } from "vitest";
import { CSV_COLUMNS, CSV_HEADER, csvField, csvLine } from "../../src/model/csv";
import type { EventRow } from "../../src/db/schema";
import { parseCsv } from "../helpers";

describe("csvField (RFC 4180)", () => {
  it("leaves plain text alone and writes null as an empty field", () => {
    expect(csvField("user.login")).toBe("user.login");
    expect(csvField(42)).toBe("42");
    expect(csvField(null)).toBe("");
    expect(csvField("")).toBe("");
  });

  it("quotes fields with quotes, commas, semicolons, CR or LF and doubles inner quotes", () => {
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField("a;b")).toBe('"a;b"');
    expect(csvField("Mozilla/5.0 (X11; Linux)")).toBe('"Mozilla/5.0 (X11; Linux)"');
    expect(csvField("line\nbreak")).toBe('"line\nbreak"');
    expect(csvField("cr\rhere")).toBe('"cr\rhere"');
    expect(csvField('{"a":1}')).toBe('"{""a"":1}"');
  });

  it("neutralizes cells a spreadsheet would run as a formula", () => {
    expect(csvField("=HYPERLINK(\"http://evil\")")).toBe('"\'=HYPERLINK(""http://evil"")"');
    expect(csvField("+1+2")).toBe("'+1+2");
    expect(csvField("-2+3")).toBe("'-2+3");
    expect(csvField("@SUM(A1)")).toBe("'@SUM(A1)");
    expect(csvField("\tcmd")).toBe("'\tcmd");
    expect(csvField("\r1")).toBe("\"'\r1\"");
    // Only where a cell can start: not inside a word.
    expect(csvField("a=b")).toBe("a=b");
    expect(csvField("user-1")).toBe("user-1");
    expect(csvField("2026-05-05T05:05:05.000Z")).toBe("2026-05-05T05:05:05.000Z");
  });

  it("neutralizes every formula start after a ; , or line break inside the cell, where another reader splits it", () => {
    expect(csvField("report.generated;=1+2")).toBe("\"report.generated;'=1+2\"");
    expect(csvField("a,-1;+2\n@x;b")).toBe("\"a,'-1;'+2\n'@x;b\"");
    expect(csvField("=1;=2")).toBe("\"'=1;'=2\"");
    expect(csvField("\r=1")).toBe("\"'\r'=1\"");
    expect(csvField(";\t;")).toBe("\";'\t;\"");
    for (const attack of ["report.generated;=1+2", "x;-2+3;@SUM(A1),+1\r\n=2", ";;=", "a;\r;b"]) {
      const [[cell]] = parseCsv(csvLine([attack]));
      expect(cell.replaceAll("'", "")).toBe(attack);
      for (const segment of cell.split(/[;,\r\n]/)) expect(segment, attack).not.toMatch(/^[=+\-@\t]/);
    }
  });

  it("round-trips through a strict reader", () => {
    const values = ['x "q" y', "a,b,c", "multi\r\nline", "=1+1", "-", "@", "plain", "", "🙂 ünïcode"];
    const [parsed] = parseCsv(csvLine(values));
    expect(parsed).toEqual(values.map((v) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v)));
  });
});

describe("event lines", () => {
  it("one header row naming every column", () => {
    expect(parseCsv(CSV_HEADER)).toEqual([[...CSV_COLUMNS]]);
  });

  it("writes each column of the event, nested values as their JSON text", () => {
    const row = {
      row_id: 1, id: "e1", project_id: "p", seq: 3, action: "doc.shared", organization: "org, inc",
      actor_id: "u_1", actor_type: "user", actor_name: 'Ann "The Hammer"', actor_email: "ann@example.com",
      targets: '[{"id":"d1","name":"Plan, v2","type":"document"}]', metadata: '{"note":"=cmd"}',
      occurred_at: "2026-05-05T05:05:05.000Z", received_at: "2026-05-05T05:05:06.000Z", ip_address: "203.0.113.9",
      user_agent: "curl/8", pii_salt: "s", pii_commitment: "c", hash: "h", prev_hash: null, signature: "v1:x", anonymized_at: null,
      changes: '[{"after":"admin","before":"viewer","field":"role"}]', schema_version: 2, schema_valid: 0,
    } satisfies EventRow;
    const [fields] = parseCsv(csvLine(CSV_COLUMNS.map((c) => row[c])));
    expect(Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, fields[i]]))).toEqual({
      id: "e1", project_id: "p", seq: "3", occurred_at: "2026-05-05T05:05:05.000Z", action: "doc.shared", organization: "org, inc",
      actor_id: "u_1", actor_type: "user", actor_name: 'Ann "The Hammer"', actor_email: "ann@example.com",
      targets: '[{"id":"d1","name":"Plan, v2","type":"document"}]', metadata: '{"note":"=cmd"}', ip_address: "203.0.113.9",
      user_agent: "curl/8", hash: "h", prev_hash: "", signature: "v1:x", pii_commitment: "c", anonymized_at: "",
      changes: '[{"after":"admin","before":"viewer","field":"role"}]', schema_version: "2", schema_valid: "0",
    });
  });
});
