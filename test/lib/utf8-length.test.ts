import { describe, expect, it } from "vitest";
import { utf8Length } from "../../src/lib/crypto";

describe("utf8Length", () => {
  it.each(["", "ascii", "é", "€uro", "😀", "a😀b€é", "\ud83d", "x\udc00y", "日本語テキスト", "\u007f\u0080\u07ff\u0800\uffff"])(
    "agrees with TextEncoder for %j",
    (text) => {
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length);
    },
  );
});
