-- The appends of a commit, by the name each worker gave its own ([token, first_seq, last_seq], JSON), on the
-- commit's span: no row of its own (issue 38: a crash at any step of a commit duplicates nothing). When the
-- runtime stops the ledger after its commit landed but before it answered, the worker finds its append here
-- and answers it as stored (src/chain/landed-appends.ts) instead of "nothing was stored", which a client's
-- retry would have stored a second time. NULL: no append was named (self-audit records, older code).
ALTER TABLE `commit_spans` ADD `appends` text;
