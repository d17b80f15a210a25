import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.DateFormatter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutorGroup;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Date;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * java-netty: Netty 4.1 on NIO, $WORKERS event loops (one acceptor thread besides).
 * Each connection lives on one loop: HttpServerCodec parses, HttpObjectAggregator
 * collects bodies up to 1 MiB (answering 413 and "100 Continue" itself), the handler
 * answers; /delay and /tenth wait on the loop's scheduler, nothing blocks. The database
 * paths (with $DATABASE_URL) run on Vert.x's reactive PostgreSQL client ({@link Database}) and
 * are answered on the connection's loop when the query completes. /compress gzips on a
 * separate {@link EventExecutorGroup} and is answered on the connection's loop likewise.
 *
 * <p>With $HTTP2 (SPEC.md, HTTP/2): Netty's HTTP/2 codec, as its multiplex example builds it.
 * {@code h2c}: every connection is HTTP/2 with prior knowledge (Http2FrameCodec + Http2MultiplexHandler,
 * no HTTP/1.1 on that port); {@code h2} with $TLS_CERT/$TLS_KEY: ALPN offers h2 and http/1.1 and
 * an ApplicationProtocolNegotiationHandler builds the chosen pipeline. Each stream is a child channel
 * whose Http2StreamFrameToHttpObjectCodec turns its frames into HTTP/1 objects, so the same
 * DateHeader, HttpObjectAggregator and Handler serve HTTP/2 streams and HTTP/1.1 connections.
 */
public final class NettyServer {
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final String SERVER = "Netty";   // the Server header of the database paths (SPEC.md)

    record Message(String message) {
    }

    public static void main(String[] args) {
        ServerEnv env = ServerEnv.read("java-netty");
        Database db = null;
        try {
            db = Database.fromEnv("java-netty", env.workers(), MAPPER);
        } catch (IllegalArgumentException e) {   // a bad DATABASE_URL or DB_POOL: one line, then exit
            System.err.println(e.getMessage());
            System.exit(1);
        }
        Database database = db;
        // /compress: gzip is long-running CPU work, which Netty's ChannelPipeline javadoc says to keep off the
        // I/O threads ("so that the I/O thread is not blocked by a time-consuming task") on an EventExecutorGroup;
        // one executor per event loop, as many as there are cores for the loops.
        EventExecutorGroup cpuGroup = new DefaultEventExecutorGroup(env.workers());
        String http2 = http2Mode(env);   // "", "h2c" or "h2"
        SslContext tls = tlsContext(env, http2.equals("h2"));   // null: plaintext
        EventLoopGroup acceptor = new NioEventLoopGroup(1);
        EventLoopGroup loops = new NioEventLoopGroup(env.workers());
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(acceptor, loops)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, ServerEnv.BACKLOG)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (tls != null) ch.pipeline().addLast(tls.newHandler(ch.alloc()));   // TLS first: the codec sees plaintext
                        if (http2.equals("h2c")) {
                            http2(ch.pipeline(), env, database, cpuGroup);
                        } else if (http2.equals("h2")) {   // after the handshake: what ALPN chose
                            ch.pipeline().addLast(new ApplicationProtocolNegotiationHandler(ApplicationProtocolNames.HTTP_1_1) {
                                @Override
                                protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
                                    if (protocol.equals(ApplicationProtocolNames.HTTP_2)) http2(ctx.pipeline(), env, database, cpuGroup);
                                    else http1(ctx.pipeline(), env, database, cpuGroup);
                                }
                            });
                        } else {
                            http1(ch.pipeline(), env, database, cpuGroup);
                        }
                    }
                });
        try {
            bootstrap.bind(env.host(), env.port()).sync();
        } catch (Exception e) {
            env.cannotListen(e.getMessage());   // exits
        }
        env.listening(env.workers() + " event loops" + (http2.isEmpty() ? "" : ", HTTP/2 (" + http2 + ")"));
    }

    /** An HTTP/1.1 connection: Netty's codec, the aggregator and the row's handler. */
    static void http1(ChannelPipeline p, ServerEnv env, Database db, EventExecutorGroup cpuGroup) {
        p.addLast(
                // header block up to 16 KiB (Netty's default is 8 KiB; SPEC.md wants 8 KiB accepted)
                new HttpServerCodec(4096, 16 * 1024, 8192),
                new DateHeader(),
                new HttpObjectAggregator(Contract.MAX_BODY),
                new Handler(env.helloFile(), db, cpuGroup));
    }

    /**
     * An HTTP/2 connection: Http2FrameCodec with Netty's default SETTINGS (Http2Settings.defaultSettings():
     * SETTINGS_MAX_CONCURRENT_STREAMS 100 and SETTINGS_MAX_HEADER_LIST_SIZE 8192; the initial window and
     * frame size are left at the protocol's 65,535 and 16,384) and its default rapid-reset guard; one child
     * channel per stream, each running the same handlers as an HTTP/1.1 connection behind
     * Http2StreamFrameToHttpObjectCodec. A connection error reaches CloseOnError after the codec has sent its GOAWAY.
     */
    static void http2(ChannelPipeline p, ServerEnv env, Database db, EventExecutorGroup cpuGroup) {
        p.addLast(Http2FrameCodecBuilder.forServer().build(), new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel stream) {
                stream.pipeline().addLast(
                        new Http2StreamFrameToHttpObjectCodec(true),
                        new DateHeader(),
                        new HttpObjectAggregator(Contract.MAX_BODY),
                        new Handler(env.helloFile(), db, cpuGroup));
            }
        }), CloseOnError.INSTANCE);
    }

    /**
     * Last in an HTTP/2 connection's pipeline: an I/O error (a reset by the peer) closes the connection, as Handler
     * does on HTTP/1.1, instead of reaching the pipeline's tail, which logs a warning for every such connection.
     * An Http2Exception is the codec's to answer: Http2FrameCodec passes it on first, then sends its GOAWAY with
     * the error's code and closes; closing here would send a GOAWAY(NO_ERROR) before it.
     */
    @ChannelHandler.Sharable
    static final class CloseOnError extends ChannelInboundHandlerAdapter {
        static final CloseOnError INSTANCE = new CloseOnError();

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (!(cause instanceof Http2Exception)) ctx.close();
        }
    }

    /** $HTTP2: "" (unset: HTTP/1.1 only), "h2c", or "h2" (which needs $TLS_CERT/$TLS_KEY); anything else exits. */
    private static String http2Mode(ServerEnv env) {
        String mode = System.getenv("HTTP2");
        if (mode == null || mode.isEmpty()) return "";
        if (mode.equals("h2c") && !ServerTls.requested() || mode.equals("h2") && ServerTls.requested()) return mode;
        System.err.println(env.name() + ": $HTTP2=" + mode + " is not served: h2c (without $TLS_*) or h2 (with $TLS_CERT/$TLS_KEY)");
        System.exit(1);
        return null;
    }

    /**
     * With $TLS_CERT/$TLS_KEY: Netty's SslContext on the JDK's TLS (JSSE), loaded from the
     * PEM files, which Netty reads itself. Without $HTTP2 no ALPN is configured (HTTP/1.1 only);
     * protocols and cipher suites are Netty's defaults. With $HTTP2=h2, what Netty's HTTP/2 examples
     * configure: ALPN offering h2 and http/1.1, and the suites of Http2SecurityUtil.CIPHERS (RFC 7540's
     * allowed ones: TLS 1.3's and TLS 1.2's ECDHE AEAD suites) that the JDK supports.
     */
    private static SslContext tlsContext(ServerEnv env, boolean h2) {
        if (!ServerTls.requested()) return null;
        try {
            SslContextBuilder builder = SslContextBuilder.forServer(new File(System.getenv("TLS_CERT")), new File(System.getenv("TLS_KEY")))
                    .sslProvider(SslProvider.JDK);
            if (h2) {
                builder.ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                        .applicationProtocolConfig(new ApplicationProtocolConfig(
                                ApplicationProtocolConfig.Protocol.ALPN,
                                ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                                ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                                ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1));
            }
            return builder.build();
        } catch (SSLException | IllegalArgumentException e) {
            System.err.println(env.name() + ": cannot load $TLS_CERT/$TLS_KEY (" + e + "); $TLS_CERT must be a PEM certificate and $TLS_KEY its PEM PKCS#8 key");
            System.exit(1);
            return null;
        }
    }

    /** Adds Date to every response, the aggregator's own 100/413 answers included. */
    static final class DateHeader extends ChannelDuplexHandler {
        private record Stamp(long second, String text) {
        }

        private static volatile Stamp stamp = new Stamp(-1, "");

        /** Formatted at most once a second, shared by all loops. */
        static String now() {
            long second = System.currentTimeMillis() / 1000;
            Stamp s = stamp;
            if (s.second() != second) {
                s = new Stamp(second, DateFormatter.format(new Date(second * 1000)));
                stamp = s;
            }
            return s.text();
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof HttpResponse r) r.headers().set(HttpHeaderNames.DATE, now());
            ctx.write(msg, promise);
        }
    }

    /**
     * One per connection. Responses go out in request order even when an earlier
     * one waits on a timer: each request takes a slot in {@link #pending}, and slots
     * are written from the front as soon as they are filled.
     */
    static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private static final int MAX_PENDING = 64;   // pipelined requests held before reading pauses
        private static final Set<String> DB_PATHS = Set.of("/db", "/queries", "/fortunes", "/updates");

        private static final class Slot {
            FullHttpResponse response;
            boolean keepAlive;
        }

        private final Path helloFile;
        private final Database db;   // null without $DATABASE_URL
        private final EventExecutorGroup cpuGroup;
        private final ArrayDeque<Slot> pending = new ArrayDeque<>();
        private boolean closing;

        Handler(Path helloFile, Database db, EventExecutorGroup cpuGroup) {
            this.helloFile = helloFile;
            this.db = db;
            this.cpuGroup = cpuGroup;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (closing) return;
            Slot slot = new Slot();
            pending.add(slot);
            if (pending.size() >= MAX_PENDING) ctx.channel().config().setAutoRead(false);
            if (req.decoderResult().isFailure()) {   // malformed: answer 400, then close
                answer(ctx, slot, text(req, HttpResponseStatus.BAD_REQUEST, "Bad Request"), false, false);
                return;
            }
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            HttpMethod method = req.method();
            boolean get = method.equals(HttpMethod.GET) || method.equals(HttpMethod.HEAD);
            QueryStringDecoder uri = new QueryStringDecoder(req.uri());
            String query = rawQuery(req.uri());
            if (DB_PATHS.contains(uri.path())) {
                database(ctx, slot, req, keepAlive, uri, get);
                return;
            }
            switch (uri.path()) {
                case "/":
                    if (!get) notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                    else answer(ctx, slot, ok(req, "text/plain", Unpooled.wrappedBuffer(Contract.HELLO)), keepAlive, false);
                    return;
                case "/json":
                    if (!get) notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                    else answer(ctx, slot, ok(req, "application/json", Unpooled.wrappedBuffer(json())), keepAlive, false);
                    return;
                case "/file":
                    if (!get) {
                        notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                        return;
                    }
                    FullHttpResponse r;
                    try {   // from disk on every request, on the loop (a small page-cached file)
                        r = ok(req, "text/html", Unpooled.wrappedBuffer(Files.readAllBytes(helloFile)));
                    } catch (IOException e) {
                        r = text(req, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Internal Server Error");
                    }
                    answer(ctx, slot, r, keepAlive, false);
                    return;
                case "/delay": {
                    if (!get) {
                        notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                        return;
                    }
                    long ms = Contract.delayMs(query);
                    int n = Contract.delayBytes(query);
                    if (ms < 0 || n < 0) {
                        answer(ctx, slot, text(req, HttpResponseStatus.BAD_REQUEST, "Bad Request"), keepAlive, false);
                        return;
                    }
                    later(ctx, slot, ok(req, "text/plain", Unpooled.wrappedBuffer(Contract.XS, 0, n)), keepAlive, ms);
                    return;
                }
                case "/tenth": {
                    if (!get) {
                        notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                        return;
                    }
                    long ms = Contract.tenthMs(query);
                    if (ms < 0) {
                        answer(ctx, slot, text(req, HttpResponseStatus.BAD_REQUEST, "Bad Request"), keepAlive, false);
                        return;
                    }
                    long count = Contract.nextTenth();
                    ByteBuf body = Unpooled.copiedBuffer(Long.toString(count), StandardCharsets.ISO_8859_1);
                    later(ctx, slot, ok(req, "text/plain", body), keepAlive, Contract.tenthWaits(count) ? ms : 0);
                    return;
                }
                case "/compress": {
                    if (!get) {
                        notAllowed(ctx, slot, req, keepAlive, "GET, HEAD");
                        return;
                    }
                    int kb = Contract.compressKb(query);
                    if (kb < 0) answer(ctx, slot, text(req, HttpResponseStatus.BAD_REQUEST, "Bad Request"), keepAlive, false);
                    else compress(ctx, slot, req, keepAlive, kb);
                    return;
                }
                case "/echo":
                    if (!method.equals(HttpMethod.POST)) notAllowed(ctx, slot, req, keepAlive, "POST");
                    else answer(ctx, slot, ok(req, "application/octet-stream", req.content().retainedDuplicate()), keepAlive, false);
                    return;
                default:
                    answer(ctx, slot, text(req, HttpResponseStatus.NOT_FOUND, "Not Found"), keepAlive, false);
            }
        }

        /**
         * A database path: the query runs on Vert.x's loops; its callback hands the response to
         * this connection's event loop (ctx.executor()), which alone touches {@link #pending}.
         */
        private void database(ChannelHandlerContext ctx, Slot slot, FullHttpRequest req, boolean keepAlive,
                              QueryStringDecoder uri, boolean get) {
            if (!get || db == null) {   // another method, or started without $DATABASE_URL
                FullHttpResponse r = get
                        ? text(req, HttpResponseStatus.SERVICE_UNAVAILABLE, "Service Unavailable")
                        : text(req, HttpResponseStatus.METHOD_NOT_ALLOWED, "Method Not Allowed");
                if (!get) r.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
                r.headers().set(HttpHeaderNames.SERVER, SERVER);
                answer(ctx, slot, r, keepAlive, false);
                return;
            }
            String path = uri.path();
            io.vertx.core.Future<byte[]> body = switch (path) {
                case "/db" -> db.db();
                case "/queries" -> db.queries(Database.count(uri.parameters().get("queries")));
                case "/updates" -> db.updates(Database.count(uri.parameters().get("queries")));
                default -> db.fortunes();
            };
            String type = path.equals("/fortunes") ? "text/html; charset=utf-8" : "application/json";
            body.onComplete(done -> ctx.executor().execute(() -> {
                FullHttpResponse r;
                if (done.succeeded()) {
                    r = ok(req, type, Unpooled.wrappedBuffer(done.result()));
                } else {
                    System.err.println("java-netty: " + path + ": " + done.cause());
                    r = text(req, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Internal Server Error");
                }
                r.headers().set(HttpHeaderNames.SERVER, SERVER);
                answer(ctx, slot, r, keepAlive, true);
            }));
        }

        /**
         * /compress: the gzip of $COMPRESS_FILE's first kb KiB (java-http-contract's compressGzip: the JDK's
         * GZIPOutputStream at zlib's level 6), made on cpuGroup (off the event loop) on every request; the
         * response goes back to this connection's loop, as the database's does. 500 if the file is unreadable.
         */
        private void compress(ChannelHandlerContext ctx, Slot slot, FullHttpRequest req, boolean keepAlive, int kb) {
            cpuGroup.execute(() -> {
                byte[] body = Contract.compressGzip(kb);
                ctx.executor().execute(() -> {
                    FullHttpResponse r = body == null
                            ? text(req, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Internal Server Error")
                            : ok(req, "application/json", Unpooled.wrappedBuffer(body));
                    if (body != null) r.headers().set(HttpHeaderNames.CONTENT_ENCODING, "gzip");
                    answer(ctx, slot, r, keepAlive, true);
                });
            });
        }

        /** The answer after ms milliseconds, on this connection's event loop timer. */
        private void later(ChannelHandlerContext ctx, Slot slot, FullHttpResponse r, boolean keepAlive, long ms) {
            if (ms == 0) answer(ctx, slot, r, keepAlive, false);
            else ctx.executor().schedule(() -> answer(ctx, slot, r, keepAlive, true), ms, TimeUnit.MILLISECONDS);
        }

        /** Fills the slot, then writes every filled slot at the front of the queue. */
        private void answer(ChannelHandlerContext ctx, Slot slot, FullHttpResponse r, boolean keepAlive, boolean flush) {
            if (closing) {
                r.release();
                return;
            }
            HttpUtil.setKeepAlive(r, keepAlive);
            slot.response = r;
            slot.keepAlive = keepAlive;
            boolean wrote = false;
            while (!pending.isEmpty() && pending.peek().response != null) {
                Slot s = pending.poll();
                wrote = true;
                if (!s.keepAlive) {   // the last answer on this connection
                    closing = true;
                    ctx.writeAndFlush(s.response).addListener(ChannelFutureListener.CLOSE);
                    for (Slot rest : pending) if (rest.response != null) rest.response.release();
                    pending.clear();
                    return;
                }
                ctx.write(s.response);
            }
            if (wrote && flush) ctx.flush();
            if (pending.size() < MAX_PENDING && !ctx.channel().config().isAutoRead()) {
                ctx.channel().config().setAutoRead(true);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();   // one flush for everything answered from this read
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();   // e.g. connection reset by the client
        }

        private void notAllowed(ChannelHandlerContext ctx, Slot slot, FullHttpRequest req, boolean keepAlive, String allow) {
            FullHttpResponse r = text(req, HttpResponseStatus.METHOD_NOT_ALLOWED, "Method Not Allowed");
            r.headers().set(HttpHeaderNames.ALLOW, allow);
            answer(ctx, slot, r, keepAlive, false);
        }
    }

    /** Per request, with Jackson. */
    static byte[] json() {
        try {
            return MAPPER.writeValueAsBytes(new Message("Hello, World!"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static String rawQuery(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? "" : uri.substring(q + 1);
    }

    static FullHttpResponse ok(FullHttpRequest req, String type, ByteBuf body) {
        return response(req, HttpResponseStatus.OK, type, body);
    }

    static FullHttpResponse text(FullHttpRequest req, HttpResponseStatus status, String msg) {
        return response(req, status, "text/plain", Unpooled.copiedBuffer(msg, StandardCharsets.ISO_8859_1));
    }

    static FullHttpResponse response(FullHttpRequest req, HttpResponseStatus status, String type, ByteBuf body) {
        int length = body.readableBytes();
        if (req.method().equals(HttpMethod.HEAD)) {   // headers only
            body.release();
            body = Unpooled.EMPTY_BUFFER;
        }
        // The request's version: an HTTP/1.0 client kept alive gets "Connection: keep-alive" (HttpUtil.setKeepAlive).
        FullHttpResponse r = new DefaultFullHttpResponse(req.protocolVersion(), status, body);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH, length);
        return r;
    }
}
