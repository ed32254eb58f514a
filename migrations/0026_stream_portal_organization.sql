-- Streams a customer's admin made in the portal (issue 37, item 3): the
-- organization whose portal made it. Such a stream always carries that
-- organization's events only, and only that organization's portal sees it.
-- NULL: made with an API key, as every stream before this.
ALTER TABLE `streams` ADD `portal_organization` text;
