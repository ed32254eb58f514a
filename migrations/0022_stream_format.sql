-- Stream formats (issue 37): what a log stream writes each event as. NULL or
-- 'json': the API's event shape, as every stream made before this did;
-- 'ocsf': an OCSF 1.3.0 event (src/model/ocsf.ts).
ALTER TABLE `streams` ADD `format` text;
