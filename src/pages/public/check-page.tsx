import { CHECK_JS_PATH, Page, render } from "./layout";

/**
 * GET /receipts: check a signed receipt in this browser. The page is a shell;
 * check-browser.js (bundled with the client's dependency-free receipt check,
 * src/client/receipt-check.js) does the work with the keys this Worker
 * publishes, so the verdict is the reader's own computation, not the server's.
 */
export function checkPage(): string {
  return render(
    <Page title="Check a Witness receipt" scripts={[CHECK_JS_PATH]} narrow>
      <h1>Check a receipt</h1>
      <p class="lead">
        Paste a Witness receipt, as your application gave it to you (JSON). Its signature and its transparency-log proof
        are checked here, in your browser, with the keys this service publishes; what you paste is not sent anywhere.
      </p>
      <form id="check-form" class="card" novalidate>
        <label for="receipt-input">Receipt JSON, a receipt link or an event id</label>
        <textarea id="receipt-input" name="receipt" spellcheck={false} autocomplete="off" aria-describedby="receipt-hint" required></textarea>
        <p id="receipt-hint" class="hint">
          A link or an event id opens Witness's own check of that event instead.
        </p>
        <button class="button" type="submit">
          Check
        </button>
      </form>
      <noscript>
        <p class="note">Checking a receipt here needs JavaScript. Without it, use npm run receipt:verify or the client's verifyReceipt().</p>
      </noscript>
      <section id="result" class="card" aria-labelledby="result-h" tabindex={-1} hidden>
        <h2 id="result-h">Result</h2>
        <p id="verdict" class="verdict"></p>
        <p id="erasure" class="note" hidden></p>
        <ul id="checks" class="checks"></ul>
        <dl id="fields" class="fields"></dl>
      </section>
    </Page>,
  );
}
