'use strict';
// node-http: one process, one event loop (the handler lives in app.js).
require('../_shared/node-http-app/app.js').start('node-http');
