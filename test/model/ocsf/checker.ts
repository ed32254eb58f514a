/**
 * The published OCSF 1.3.0 definitions (vendored verbatim in this folder;
 * README.md names the source) and `check`, which applies them the way the
 * OCSF server's event validator does (ocsf/ocsf-server
 * lib/schema/validator2.ex). Shared by the mapping's unit tests
 * (test/model/ocsf.test.ts) and the routes that serve format=ocsf.
 */
interface AttributeDef {
  type: string;
  requirement: string | null;
  is_array: boolean;
  enum: Record<string, { caption: string }> | null;
  profile: string | null;
  sibling: string | null;
  object_type: string | null;
}
interface Definition {
  name: string;
  caption: string;
  uid?: number;
  attributes: Record<string, AttributeDef>;
  constraints: { at_least_one?: string[]; just_one?: string[] } | null;
}
interface TypeDef {
  type: string | null;
  max_len: number | null;
  regex: string | null;
  range: [number, number] | null;
  values: unknown[] | null;
}

const files = import.meta.glob("./**/*.json", { eager: true, import: "default" }) as Record<string, unknown>;
const named = (dir: string) =>
  Object.fromEntries(Object.entries(files).filter(([p]) => p.startsWith(`./${dir}/`)).map(([p, v]) => [p.slice(`./${dir}/`.length, -5), v]));
export const CLASSES = named("classes") as Record<string, Definition>;
const OBJECTS = named("objects") as Record<string, Definition>;
const TYPES = files["./types.json"] as Record<string, TypeDef>;
const PROFILES = files["./profiles.json"] as Record<string, unknown>;
export const classByUid = new Map(Object.values(CLASSES).map((c) => [c.uid!, c]));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The errors the OCSF server's validator would report for `event` against the vendored 1.3.0 definitions, as "path: problem". */
export function check(event: Record<string, unknown>): string[] {
  const errors: string[] = [];
  const cls = classByUid.get(event.class_uid as number);
  if (!cls) return [`class_uid: ${String(event.class_uid)} is not a vendored class`];
  const meta = event.metadata;
  const profiles = isObject(meta) && Array.isArray(meta.profiles) ? (meta.profiles as string[]) : [];
  for (const p of profiles) if (!Object.hasOwn(PROFILES, p)) errors.push(`metadata.profiles: unknown profile ${p}`);
  const active = (def: Definition) => Object.entries(def.attributes).filter(([, a]) => a.profile === null || profiles.includes(a.profile));

  const constraints = (item: Record<string, unknown>, def: Definition, path: string) => {
    const c = def.constraints ?? {};
    if (c.at_least_one && !c.at_least_one.some((k) => k in item)) errors.push(`${path || def.name}: needs at least one of ${c.at_least_one.join(", ")}`);
    if (c.just_one && c.just_one.filter((k) => k in item).length !== 1) errors.push(`${path || def.name}: needs exactly one of ${c.just_one.join(", ")}`);
  };

  const value = (v: unknown, a: AttributeDef, path: string) => {
    if (a.object_type !== null) {
      const def = OBJECTS[a.object_type];
      if (!def) return void errors.push(`${path}: object ${a.object_type} is not vendored (add it to test/model/ocsf/objects/)`);
      if (!isObject(v)) return void errors.push(`${path}: must be a ${a.object_type} object`);
      attributes(v, def, path);
      return constraints(v, def, path);
    }
    const t = TYPES[a.type];
    if (!t) return void errors.push(`${path}: type ${a.type} is not vendored`);
    const primitive = t.type ?? a.type;
    const superType = t.type ? TYPES[t.type] : null;
    const ok =
      primitive === "json_t" ||
      (primitive === "string_t" && typeof v === "string") ||
      (primitive === "boolean_t" && typeof v === "boolean") ||
      (primitive === "float_t" && typeof v === "number") ||
      ((primitive === "integer_t" || primitive === "long_t") && Number.isSafeInteger(v));
    if (!ok) return void errors.push(`${path}: ${JSON.stringify(v)} is not ${a.type}`);
    const maxLen = t.max_len ?? superType?.max_len ?? null;
    if (typeof v === "string" && maxLen !== null && [...v].length > maxLen) errors.push(`${path}: longer than ${maxLen}`);
    if (typeof v === "string" && t.regex !== null && !new RegExp(t.regex).test(v)) errors.push(`${path}: ${JSON.stringify(v)} does not match ${a.type}`);
    if (typeof v === "number" && t.range && (v < t.range[0] || v > t.range[1])) errors.push(`${path}: out of ${a.type} range`);
    if (t.values && !t.values.includes(v)) errors.push(`${path}: not one of ${a.type}'s values`);
  };

  const attributes = (item: Record<string, unknown>, def: Definition, parent: string) => {
    const attrs = active(def);
    const at = (name: string) => (parent ? `${parent}.${name}` : name);
    for (const [name, a] of attrs) {
      const v = item[name];
      if (v === undefined || v === null) {
        if (a.requirement === "required") errors.push(`${at(name)}: required`);
        continue;
      }
      if (a.is_array) {
        if (!Array.isArray(v)) errors.push(`${at(name)}: must be an array`);
        else v.forEach((e, i) => value(e, a, `${at(name)}[${i}]`));
      } else value(v, a, at(name));
      if (a.enum) {
        const caption = a.enum[String(v)]?.caption;
        if (caption === undefined) errors.push(`${at(name)}: ${JSON.stringify(v)} is not in the enum`);
        else if (a.sibling && item[a.sibling] !== undefined && v !== 99 && item[a.sibling] !== caption) {
          errors.push(`${at(a.sibling)}: ${JSON.stringify(item[a.sibling])} is not the caption of ${name} ${String(v)} (${caption})`);
        }
      }
    }
    // An object with no attributes (`object`, the type of `unmapped`) is open-ended.
    if (attrs.length > 0) for (const key of Object.keys(item)) if (!attrs.some(([n]) => n === key)) errors.push(`${at(key)}: not defined in ${def.name}`);
  };

  attributes(event, cls, "");
  constraints(event, cls, "");
  if (isObject(meta) && meta.version !== "1.3.0") errors.push(`metadata.version: ${String(meta.version)} is not the vendored 1.3.0`);
  if (event.type_uid !== (event.class_uid as number) * 100 + (event.activity_id as number)) errors.push("type_uid: not class_uid * 100 + activity_id");
  if ("observables" in event) errors.push("observables: this checker does not check them");
  return errors;
}

