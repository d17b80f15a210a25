// csharp-mono: a TcpListener with async/await and hand-written HTTP/1.1, on Mono.
// (Mono's System.Net.HttpListener was tried first: it drops pipelined requests that
// arrive behind one still being answered, and answers 400 "Invalid host" to any Host
// header that does not match its prefix, so it cannot meet SPEC.md.)
// The main thread accepts; every connection is an async loop whose continuations run on
// the thread pool, whose worker threads $WORKERS sets (minimum and maximum). /delay awaits
// Task.Delay, so a waiting request holds no thread.
using System;
using System.Collections.Generic;
using System.IO;
using System.IO.Compression;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Runtime.Serialization;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Runtime.Serialization.Json;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

[DataContract]
class Message
{
    [DataMember(Name = "message")]
    public string Text = "Hello, World!";
}

class BadRequest : Exception
{
    public readonly int Status;
    public BadRequest(int status) { Status = status; }
}

// The Date header, formatted at most once a second and shared by all responses.
static class HttpDate
{
    class Stamp { public long Second; public string Text; }
    static Stamp current = new Stamp { Second = -1 };

    public static string Now()
    {
        DateTime now = DateTime.UtcNow;
        long second = now.Ticks / TimeSpan.TicksPerSecond;
        Stamp s = Volatile.Read(ref current);
        if (s.Second != second)
        {
            s = new Stamp { Second = second, Text = now.ToString("r") }; // IMF-fixdate
            Volatile.Write(ref current, s);
        }
        return s.Text;
    }
}

// One client connection: a read buffer, and the requests parsed from it in order.
class Connection
{
    const int MaxHead = 64 * 1024;
    readonly Stream stream; // the NetworkStream, or the SslStream over it
    byte[] buf = new byte[8192];
    int start, end; // unread bytes are buf[start..end)

    public Connection(Stream stream) { this.stream = stream; }

    async Task<bool> ReadMore()
    {
        if (start > 0)
        {
            Buffer.BlockCopy(buf, start, buf, 0, end - start);
            end -= start;
            start = 0;
        }
        if (end == buf.Length) Array.Resize(ref buf, buf.Length * 2);
        int n = await stream.ReadAsync(buf, end, buf.Length - end);
        end += n;
        return n > 0;
    }

    // The request head up to its blank line (without it), or null when the client closed.
    public async Task<string> ReadHead()
    {
        int scanned = start;
        while (true)
        {
            for (int i = Math.Max(scanned, start + 3); i < end; i++)
            {
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
                {
                    string head = Encoding.GetEncoding("iso-8859-1").GetString(buf, start, i - 3 - start);
                    start = i + 1;
                    return head;
                }
            }
            // Empty lines before a request line are skipped (RFC 9112 2.2).
            while (end - start >= 2 && buf[start] == '\r' && buf[start + 1] == '\n') start += 2;
            if (end - start > MaxHead) throw new BadRequest(431);
            scanned = end;
            int before = start;
            if (!await ReadMore()) return end - start == 0 ? null : Throw400();
            scanned -= before - start;
        }
    }

    static string Throw400() { throw new BadRequest(400); }

    public async Task<string> ReadLine(int max)
    {
        int scanned = start;
        while (true)
        {
            for (int i = Math.Max(scanned, start + 1); i < end; i++)
            {
                if (buf[i] == '\n' && buf[i - 1] == '\r')
                {
                    string line = Encoding.ASCII.GetString(buf, start, i - 1 - start);
                    start = i + 1;
                    return line;
                }
            }
            if (end - start > max) throw new BadRequest(400);
            scanned = end;
            int before = start;
            if (!await ReadMore()) throw new BadRequest(400);
            scanned -= before - start;
        }
    }

    // Exactly count bytes of body into dst.
    public async Task ReadExact(Stream dst, int count)
    {
        while (count > 0)
        {
            if (end == start && !await ReadMore()) throw new BadRequest(400);
            int n = Math.Min(count, end - start);
            dst.Write(buf, start, n);
            start += n;
            count -= n;
        }
    }

    public Task Write(byte[] data, int offset, int count)
    {
        return stream.WriteAsync(data, offset, count);
    }
}

static class Server
{
    const int MaxBody = 1 << 20;
    const int MaxDelayMs = 60000;
    const int MaxCompressKb = 4096;
    static readonly byte[] Hello = Encoding.ASCII.GetBytes("Hello, World!");
    static readonly byte[] Xs = Encoding.ASCII.GetBytes(new string('x', MaxBody)); // /delay bodies come from here
    static readonly DataContractJsonSerializer JsonSerializer = new DataContractJsonSerializer(typeof(Message));
    static string helloFile;
    static byte[] compressDoc; // $COMPRESS_FILE, read once at start; /compress gzips a prefix of it per request
    static long counter;
    static X509Certificate2 tlsCert; // with $TLS_CERT/$TLS_KEY: every connection speaks TLS

    // SPEC "TLS": $TLS_CERT/$TLS_KEY ask for TLS; SslStream takes an X509Certificate2 with its key,
    // which Mono loads from a key store, so the row reads $TLS_PKCS12 (password $TLS_PKCS12_PASSWORD).
    // Returns null for plaintext, or an error line.
    static string LoadTls()
    {
        bool cert = !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("TLS_CERT"));
        bool key = !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("TLS_KEY"));
        if (!cert && !key) return null;
        if (!cert || !key)
            return (cert ? "TLS_CERT is set but TLS_KEY is not" : "TLS_KEY is set but TLS_CERT is not") +
                   "; set both (PEM certificate and PKCS#8 key) or neither";
        string p12 = Environment.GetEnvironmentVariable("TLS_PKCS12");
        if (string.IsNullOrEmpty(p12))
            return "TLS_CERT/TLS_KEY are set but TLS_PKCS12 is not; Mono's SslStream loads the key from a PKCS#12 file: set TLS_PKCS12 and TLS_PKCS12_PASSWORD";
        try
        {
            tlsCert = new X509Certificate2(p12, Environment.GetEnvironmentVariable("TLS_PKCS12_PASSWORD") ?? "");
        }
        catch (Exception e)
        {
            // Mono 6.8 decodes PKCS#12 with the legacy ciphers (3DES, RC2) only: PBES2/AES
            // files (OpenSSL 3's default) end here with "Unable to decode certificate."
            return "cannot load TLS_PKCS12 " + p12 + ": " + e.Message +
                   " (Mono 6.8 reads PKCS#12 only with legacy 3DES/RC2 encryption, not PBES2/AES)";
        }
        return null;
    }

    static int Main()
    {
        string host = Environment.GetEnvironmentVariable("HOST") ?? "127.0.0.1";
        string portText = Environment.GetEnvironmentVariable("PORT") ?? "8080";
        helloFile = Environment.GetEnvironmentVariable("HELLO_FILE") ?? "../../assets/hello.html";
        string compressFile = Environment.GetEnvironmentVariable("COMPRESS_FILE");
        if (!string.IsNullOrEmpty(compressFile)) compressDoc = File.ReadAllBytes(compressFile);
        int workers;
        if (!int.TryParse(Environment.GetEnvironmentVariable("WORKERS"), out workers) || workers < 1)
            workers = Environment.ProcessorCount;
        int io, unusedIo;
        ThreadPool.GetMinThreads(out unusedIo, out io);
        ThreadPool.SetMinThreads(workers, io);
        ThreadPool.GetMaxThreads(out unusedIo, out io);
        ThreadPool.SetMaxThreads(workers, io);

        string tlsError = LoadTls(); // before the bind: a bad TLS setting fails first
        if (tlsError != null)
        {
            Console.Error.WriteLine("csharp-mono: " + tlsError);
            return 1;
        }
        string dbError = Database.Open(); // $DB_POOL connections, or none without $DATABASE_URL
        if (dbError != null)
        {
            Console.Error.WriteLine("csharp-mono: " + dbError);
            return 1;
        }
        TcpListener listener;
        try
        {
            IPAddress ip;
            if (!IPAddress.TryParse(host, out ip)) ip = Dns.GetHostAddresses(host)[0];
            listener = new TcpListener(ip, int.Parse(portText));
            listener.Start(1024);
        }
        catch (Exception e)
        {
            Console.Error.WriteLine("csharp-mono: cannot listen on " + host + ":" + portText + ": " + e.Message);
            return 1;
        }
        Console.WriteLine("csharp-mono listening on " + host + ":" + portText + " (" + workers + " pool threads)");
        // The main thread only accepts (blocking); each connection's async loop runs on the pool.
        while (true)
        {
            TcpClient client = listener.AcceptTcpClient();
            _ = Task.Run(() => Serve(client)); // not awaited: accept the next one at once
        }
    }

    static async Task Serve(TcpClient client)
    {
        try
        {
            client.NoDelay = true;
            Stream stream = client.GetStream();
            SslStream ssl = null;
            if (tlsCert != null)
            {
                ssl = new SslStream(stream, false);
                // minimum TLS 1.2 (SPEC); Tls13 asked for too, but Mono 6.8's BoringSSL (btls) has
                // none: a TLS 1.3-only client fails with NO_SHARED_CIPHER (see explanation)
                await ssl.AuthenticateAsServerAsync(tlsCert, false, SslProtocols.Tls12 | SslProtocols.Tls13, false);
                stream = ssl;
            }
            var conn = new Connection(stream);
            while (true)
            {
                bool keepAlive;
                try
                {
                    string head = await conn.ReadHead();
                    if (head == null) return;
                    keepAlive = await Handle(conn, head);
                }
                catch (BadRequest e)
                {
                    // Malformed: answer, then close (the rest of the stream cannot be trusted).
                    string text = e.Status == 413 ? "Content Too Large" : e.Status == 431 ? "Request Header Fields Too Large" : "Bad Request";
                    await Respond(conn, e.Status, "text/plain", Encoding.ASCII.GetBytes(text), 0, text.Length, false, "HTTP/1.1", false);
                    if (ssl != null) await ssl.ShutdownAsync(); // close_notify before the TCP close
                    return;
                }
                if (!keepAlive)
                {
                    if (ssl != null) await ssl.ShutdownAsync(); // close_notify before the TCP close
                    return;
                }
            }
        }
        catch (IOException) { }        // the client went away
        catch (SocketException) { }
        catch (AuthenticationException) { } // a failed TLS handshake: the client got its alert
        catch (ObjectDisposedException) { }
        catch (Exception e)
        {
            Console.Error.WriteLine("csharp-mono: " + e);
        }
        finally
        {
            client.Close();
        }
    }

    // Parses one request head, reads its body, answers it; returns whether to keep the connection.
    static async Task<bool> Handle(Connection conn, string requestHead)
    {
        string[] lines = requestHead.Split(new[] { "\r\n" }, StringSplitOptions.None);
        string[] first = lines[0].Split(' ');
        if (first.Length != 3 || first[0].Length == 0 || first[1].Length == 0) throw new BadRequest(400);
        string method = first[0], target = first[1], version = first[2];
        foreach (char c in method) if (c < 'A' || c > 'Z') throw new BadRequest(400);
        if (version != "HTTP/1.1" && version != "HTTP/1.0") throw new BadRequest(version.StartsWith("HTTP/") ? 505 : 400);

        long contentLength = -1;
        bool chunked = false, hasTransferEncoding = false, close = false, keepAliveToken = false;
        for (int i = 1; i < lines.Length; i++)
        {
            string line = lines[i];
            int colon = line.IndexOf(':');
            if (colon <= 0 || line[0] == ' ' || line[0] == '\t' || line[colon - 1] == ' ') throw new BadRequest(400);
            string name = line.Substring(0, colon);
            string value = line.Substring(colon + 1).Trim();
            if (name.Equals("Content-Length", StringComparison.OrdinalIgnoreCase))
            {
                long n;
                if (value.Length == 0 || value.Length > 15 || !AllDigits(value) || !long.TryParse(value, out n)) throw new BadRequest(400);
                if (contentLength >= 0 && contentLength != n) throw new BadRequest(400);
                contentLength = n;
            }
            else if (name.Equals("Transfer-Encoding", StringComparison.OrdinalIgnoreCase))
            {
                hasTransferEncoding = true;
                chunked = value.Equals("chunked", StringComparison.OrdinalIgnoreCase);
            }
            else if (name.Equals("Connection", StringComparison.OrdinalIgnoreCase))
            {
                foreach (string token in value.Split(','))
                {
                    string t = token.Trim();
                    if (t.Equals("close", StringComparison.OrdinalIgnoreCase)) close = true;
                    else if (t.Equals("keep-alive", StringComparison.OrdinalIgnoreCase)) keepAliveToken = true;
                }
            }
        }
        bool keepAlive = !close && (version == "HTTP/1.1" || keepAliveToken);

        // The body (any method may carry one; it must be consumed to find the next request).
        if (hasTransferEncoding && (!chunked || contentLength >= 0)) throw new BadRequest(400);
        var body = new MemoryStream();
        if (chunked) await ReadChunked(conn, body);
        else if (contentLength > MaxBody) throw new BadRequest(413);
        else if (contentLength > 0) await conn.ReadExact(body, (int)contentLength);

        if (target.StartsWith("http://", StringComparison.OrdinalIgnoreCase)) // absolute-form
        {
            int slash = target.IndexOf('/', 7);
            target = slash < 0 ? "/" : target.Substring(slash);
        }
        if (target[0] != '/') throw new BadRequest(400);
        int q = target.IndexOf('?');
        string path = q < 0 ? target : target.Substring(0, q);
        string query = q < 0 ? "" : target.Substring(q + 1);
        bool get = method == "GET" || method == "HEAD";
        bool head = method == "HEAD";

        switch (path)
        {
            case "/echo":
                if (method != "POST") return await Text(conn, 405, "Method Not Allowed", keepAlive, version);
                return await Respond(conn, 200, "application/octet-stream", body.GetBuffer(), 0, (int)body.Length, keepAlive, version, false);
            case "/": case "/json": case "/file": case "/delay": case "/tenth":
            case "/db": case "/queries": case "/fortunes": case "/updates": case "/compress":
                if (!get) return await Text(conn, 405, "Method Not Allowed", keepAlive, version);
                break;
            default:
                return await Text(conn, 404, "Not Found", keepAlive, version);
        }

        switch (path)
        {
            case "/":
                return await Respond(conn, 200, "text/plain", Hello, 0, Hello.Length, keepAlive, version, head);
            case "/json":
            {
                var json = new MemoryStream();
                JsonSerializer.WriteObject(json, new Message());
                return await Respond(conn, 200, "application/json", json.GetBuffer(), 0, (int)json.Length, keepAlive, version, head);
            }
            case "/file":
            {
                byte[] data = File.ReadAllBytes(helloFile); // read from disk every time
                return await Respond(conn, 200, "text/html", data, 0, data.Length, keepAlive, version, head);
            }
            case "/delay":
            {
                var args = ParseQuery(query);
                int ms = IntParam(args, "ms", MaxDelayMs, 0);
                int bytes = IntParam(args, "bytes", MaxBody, 0);
                if (ms < 0 || bytes < 0) return await Text(conn, 400, "Bad Request", keepAlive, version);
                if (ms > 0) await Task.Delay(ms);
                return await Respond(conn, 200, "text/plain", Xs, 0, bytes, keepAlive, version, head);
            }
            case "/compress":
            {
                int kb = IntParam(ParseQuery(query), "kb", MaxCompressKb, 0);
                if (kb < 1) return await Text(conn, 400, "Bad Request", keepAlive, version);
                // Compressed on every request, inline on the pool thread serving this connection:
                // the row's requests already run on thread-pool threads, and .NET's guidance for
                // CPU-bound work there is to run it synchronously, not to wrap it in Task.Run
                // (ASP.NET Core Best Practices, "Avoid blocking calls": Task.Run then await only adds
                // thread-pool scheduling). Mono's GZipStream ignores the CompressionLevel: its
                // native helper (MonoPosixHelper's CreateZStream) calls deflateInit2 with
                // Z_DEFAULT_COMPRESSION, zlib's level 6, and a gzip wrapper (windowBits 31).
                var gz = new MemoryStream();
                using (var zip = new GZipStream(gz, CompressionLevel.Optimal, true))
                    zip.Write(compressDoc, 0, kb * 1024);
                return await Respond(conn, 200, "application/json", gz.GetBuffer(), 0, (int)gz.Length, keepAlive, version, head,
                                     false, "gzip");
            }
            case "/db": case "/queries": case "/fortunes": case "/updates":
                return await DatabasePath(conn, path, query, keepAlive, version, head);
            default: // "/tenth"
            {
                int ms = IntParam(ParseQuery(query), "ms", MaxDelayMs, 2000);
                if (ms < 0) return await Text(conn, 400, "Bad Request", keepAlive, version);
                long value = Interlocked.Increment(ref counter);
                if (value % 10 == 0 && ms > 0) await Task.Delay(ms);
                byte[] text = Encoding.ASCII.GetBytes(value.ToString());
                return await Respond(conn, 200, "text/plain", text, 0, text.Length, keepAlive, version, head);
            }
        }
    }

    // The database paths (Database.cs): 503 without $DATABASE_URL. The queries block this pool
    // thread; the connection's other requests wait behind them, other connections run on the
    // pool's other threads.
    static async Task<bool> DatabasePath(Connection conn, string path, string query, bool keepAlive, string version, bool head)
    {
        if (!Database.Configured)
            return await Text(conn, 503, "no database configured (DATABASE_URL is not set)", keepAlive, version);
        string type = "application/json";
        byte[] body;
        try
        {
            switch (path)
            {
                case "/db": body = Database.One(); break;
                case "/queries": body = Database.Many(Database.QueryCount(ParseQuery(query))); break;
                case "/updates": body = Database.Update(Database.QueryCount(ParseQuery(query))); break;
                default: body = Database.FortunesPage(); type = "text/html; charset=utf-8"; break;
            }
        }
        catch (System.Data.Odbc.OdbcException e)
        {
            return await Text(conn, 500, "database error: " + e.Message.Trim(), keepAlive, version);
        }
        return await Respond(conn, 200, type, body, 0, body.Length, keepAlive, version, head, true);
    }

    static async Task ReadChunked(Connection conn, MemoryStream body)
    {
        while (true)
        {
            string line = await conn.ReadLine(1024);
            int semi = line.IndexOf(';');
            string hex = (semi < 0 ? line : line.Substring(0, semi)).Trim();
            int size;
            if (hex.Length == 0 || hex.Length > 8 ||
                !int.TryParse(hex, System.Globalization.NumberStyles.AllowHexSpecifier, null, out size) || size < 0)
                throw new BadRequest(400);
            if (size == 0) break;
            if (body.Length + size > MaxBody) throw new BadRequest(413);
            await conn.ReadExact(body, size);
            if (await conn.ReadLine(0) != "") throw new BadRequest(400);
        }
        while (await conn.ReadLine(8192) != "") { } // trailer fields
    }

    static Task<bool> Text(Connection conn, int status, string text, bool keepAlive, string version)
    {
        byte[] b = Encoding.ASCII.GetBytes(text);
        return Respond(conn, status, "text/plain", b, 0, b.Length, keepAlive, version, false);
    }

    static string Reason(int status)
    {
        switch (status)
        {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 413: return "Content Too Large";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 503: return "Service Unavailable";
            case 505: return "HTTP Version Not Supported";
            default: return "Unknown";
        }
    }

    // Status line, headers and body in one write (headers alone first for big bodies). The
    // database paths name the server (SPEC), the others send no Server header.
    static async Task<bool> Respond(Connection conn, int status, string type, byte[] body, int offset, int length,
                                    bool keepAlive, string version, bool headOnly, bool serverHeader = false,
                                    string contentEncoding = null)
    {
        var sb = new StringBuilder(160);
        sb.Append("HTTP/1.1 ").Append(status).Append(' ').Append(Reason(status)).Append("\r\n");
        sb.Append("Date: ").Append(HttpDate.Now()).Append("\r\n");
        if (serverHeader) sb.Append("Server: csharp-mono\r\n");
        sb.Append("Content-Type: ").Append(type).Append("\r\n");
        if (contentEncoding != null) sb.Append("Content-Encoding: ").Append(contentEncoding).Append("\r\n");
        sb.Append("Content-Length: ").Append(length).Append("\r\n");
        if (!keepAlive) sb.Append("Connection: close\r\n");
        else if (version == "HTTP/1.0") sb.Append("Connection: keep-alive\r\n");
        sb.Append("\r\n");
        byte[] headBytes = Encoding.ASCII.GetBytes(sb.ToString());
        if (headOnly) length = 0;
        if (length <= 16384)
        {
            byte[] all = new byte[headBytes.Length + length];
            Buffer.BlockCopy(headBytes, 0, all, 0, headBytes.Length);
            Buffer.BlockCopy(body, offset, all, headBytes.Length, length);
            await conn.Write(all, 0, all.Length);
        }
        else
        {
            await conn.Write(headBytes, 0, headBytes.Length);
            await conn.Write(body, offset, length);
        }
        return keepAlive;
    }

    static bool AllDigits(string s)
    {
        foreach (char c in s) if (c < '0' || c > '9') return false;
        return true;
    }

    static Dictionary<string, string> ParseQuery(string query)
    {
        var args = new Dictionary<string, string>();
        foreach (string pair in query.Split('&'))
        {
            if (pair.Length == 0) continue;
            int eq = pair.IndexOf('=');
            string key = Uri.UnescapeDataString(eq < 0 ? pair : pair.Substring(0, eq));
            args[key] = Uri.UnescapeDataString(eq < 0 ? "" : pair.Substring(eq + 1));
        }
        return args;
    }

    // Optional decimal parameter within [0, hi]; -1 when malformed or out of range.
    static int IntParam(Dictionary<string, string> args, string key, int hi, int def)
    {
        string s;
        if (!args.TryGetValue(key, out s)) return def;
        if (s.Length == 0 || s.Length > 9 || !AllDigits(s)) return -1;
        int n = int.Parse(s);
        return n <= hi ? n : -1;
    }
}
