/**
 * The public pages' one stylesheet, served by the Worker at PUBLIC_CSS_PATH so
 * the pages' CSP can say style-src 'self' (no inline style, no nonce, cached
 * once). Colours meet WCAG AA on their backgrounds; a check's result is its
 * words and an icon, never colour alone. Mobile first: one column up to
 * 40rem, the field grid from there.
 */
export const PUBLIC_CSS = `
:root{--fg:#1b1f24;--muted:#57606a;--bg:#f6f7f9;--card:#fff;--line:#d5dae0;--accent:#0b5cad;--accent-bg:#e8f1fb;
--ok:#116329;--ok-bg:#dcf3e3;--bad:#a40e26;--bad-bg:#ffe5e8;--warn:#7a4a00;--warn-bg:#fff3d6;--radius:10px;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent);overflow-wrap:anywhere}a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip-link{position:absolute;left:-999px;top:0;background:var(--card);padding:.5rem 1rem;z-index:1}.skip-link:focus{left:0}
.site{background:var(--card);border-bottom:1px solid var(--line)}
.site .bar{max-width:60rem;margin:0 auto;padding:.75rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:center;justify-content:space-between}
.brand{font-weight:700;font-size:1.1rem;color:var(--fg);text-decoration:none;letter-spacing:.01em}
.site nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0;padding:0;list-style:none}
.site nav a{text-decoration:none;padding:.25rem 0}.site nav a:hover{text-decoration:underline}
main{max-width:60rem;margin:0 auto;padding:1.5rem 1rem 3rem}
.narrow>*{max-width:46rem}
[tabindex="-1"]:focus{outline:none}
.card h2:first-child{margin-top:0}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 .75rem}
h2{font-size:1.15rem;margin:2rem 0 .75rem}
p{margin:0 0 1rem}
.lead{font-size:1.125rem;color:var(--muted);max-width:42rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:var(--radius);padding:1.25rem;margin:0 0 1rem}
.cards{display:grid;gap:1rem;grid-template-columns:1fr;margin:1.5rem 0}
.cards .card{margin:0;display:flex;flex-direction:column}
.cards h2{margin-top:0}
.cards .card p:last-child{margin-bottom:0;margin-top:auto}
.button{display:inline-block;background:var(--accent);color:#fff;border:1px solid var(--accent);border-radius:8px;padding:.55rem 1.1rem;
font:inherit;font-weight:600;text-decoration:none;cursor:pointer}
.button:hover{background:#084a8c}
.button.secondary{background:transparent;color:var(--accent)}
code,pre,kbd{font-family:var(--mono);font-size:.9em}
code{overflow-wrap:anywhere}
pre{background:#0f1720;color:#e6edf3;border-radius:8px;padding:.9rem 1rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 1rem}
dl.fields{display:grid;grid-template-columns:1fr;gap:.15rem 1rem;margin:0}
dl.fields dt{color:var(--muted);font-size:.9rem;margin-top:.6rem}
dl.fields dd{margin:0;overflow-wrap:anywhere}
.iso{display:block;color:var(--muted);font-size:.85rem}
.verdict{border-radius:8px;padding:.9rem 1rem;margin:0 0 1.25rem;font-weight:600;border:1px solid}
.verdict.ok{background:var(--ok-bg);color:var(--ok);border-color:#9bd3ad}
.verdict.bad{background:var(--bad-bg);color:var(--bad);border-color:#f2a7b2}
.verdict.warn{background:var(--warn-bg);color:var(--warn);border-color:#f0cf8a}
.note{background:var(--warn-bg);color:var(--warn);border:1px solid #f0cf8a;border-radius:8px;padding:.75rem 1rem;margin:0 0 1.25rem}
.info{background:var(--accent-bg);border:1px solid #b6d3f2;border-radius:8px;padding:.75rem 1rem;margin:0 0 1.25rem}
ul.checks{list-style:none;margin:0 0 1.25rem;padding:0;display:grid;gap:.5rem}
.check{display:flex;gap:.6rem;align-items:flex-start;border-radius:8px;padding:.6rem .8rem;border:1px solid}
.check .icon{flex:none;font-weight:700;width:1.4rem;height:1.4rem;border-radius:50%;display:inline-flex;align-items:center;justify-content:center;color:#fff;font-size:.85rem;margin-top:.1rem}
.check .what{display:block;font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;font-weight:600}
.check .result{display:block;font-weight:600}
.check .why{display:block;font-weight:400;font-size:.9rem;overflow-wrap:anywhere}
.check.pass{background:var(--ok-bg);color:var(--ok);border-color:#9bd3ad}.check.pass .icon{background:var(--ok)}
.check.fail{background:var(--bad-bg);color:var(--bad);border-color:#f2a7b2}.check.fail .icon{background:var(--bad)}
.check.skip,.check.pending{background:#eef0f3;color:#424a53;border-color:var(--line)}.check.skip .icon,.check.pending .icon{background:#6e7781}
details{margin:0 0 1rem}summary{cursor:pointer;color:var(--accent);font-weight:600;margin:0 0 .5rem}
label{display:block;font-weight:600;margin:0 0 .4rem}
.hint{color:var(--muted);font-size:.9rem;margin:.4rem 0 1rem}
textarea{width:100%;min-height:10rem;font:14px/1.45 var(--mono);color:inherit;background:var(--card);border:1px solid #8c959f;border-radius:8px;padding:.6rem .75rem;resize:vertical}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.75rem;margin:0 0 1rem}
.stat{background:var(--card);border:1px solid var(--line);border-radius:var(--radius);padding:.75rem 1rem}
.stat b{display:block;font-size:1.5rem;line-height:1.2;overflow-wrap:anywhere}
.stat span{color:var(--muted);font-size:.9rem}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{color:var(--muted);font-weight:600}
.table-wrap{overflow-x:auto}
footer.site-foot{max-width:60rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.9rem}
[hidden]{display:none!important}
@media (min-width:40rem){
h1{font-size:2rem}
.cards{grid-template-columns:repeat(3,1fr)}
dl.fields{grid-template-columns:11rem 1fr;gap:.6rem 1rem}
dl.fields dt{margin-top:0}
.card{padding:1.5rem}
}
`;
