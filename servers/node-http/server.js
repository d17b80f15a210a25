'use strict';
// node-http: one process, one event loop (the handler lives in app.js, the database paths in db.js).
// The packages come from this folder's node_modules (`npm ci`), so they are required here.
require('../_shared/node-http-app/app.js').start('node-http', {
  pg: require('pg'),
  escapeHtml: require('escape-html'),
});
