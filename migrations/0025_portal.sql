-- The customer's admin portal (issue 37, item 3). A link is a one-time token an
-- admin key mints for one organization; redeeming it opens a session. Both are
-- named by the SHA-256 of their secret: neither table gives one away.
CREATE TABLE `portal_links` (
  `id` text PRIMARY KEY NOT NULL,
  `project_id` text NOT NULL,
  `organization` text NOT NULL,
  `abilities` text NOT NULL,
  `token_hash` text NOT NULL,
  `created_by` text NOT NULL,
  `created_at` text NOT NULL,
  `expires_at` text NOT NULL,
  `used_at` text
);
CREATE UNIQUE INDEX `portal_links_token` ON `portal_links` (`token_hash`);
CREATE INDEX `portal_links_project` ON `portal_links` (`project_id`, `created_at`);
CREATE TABLE `portal_sessions` (
  `id` text PRIMARY KEY NOT NULL,
  `link_id` text NOT NULL,
  `project_id` text NOT NULL,
  `organization` text NOT NULL,
  `abilities` text NOT NULL,
  `csrf` text NOT NULL,
  `created_at` text NOT NULL,
  `expires_at` text NOT NULL
);
