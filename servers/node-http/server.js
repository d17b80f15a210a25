'use strict';
// node-http: one process, one event loop (the handler lives in app.js).
require('./app.js').start('node-http');
