import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPOutputStream;

/**
 * What SPEC.md fixes about the endpoints, whatever serves them: the bodies, the
 * /echo limit, the parameters of /delay and /tenth with their ranges and defaults,
 * and the process-wide /tenth counter. Every java-* row compiles this folder.
 */
final class Contract {
    private Contract() {
    }

    static final int MAX_BODY = 1 << 20;   // POST /echo limit, and the most /delay?bytes= asks for
    static final int MAX_MS = 60_000;      // /delay and /tenth wait at most this long
    static final int MAX_KB = 4096;        // /compress?kb= at most this many KiB of $COMPRESS_FILE
    static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.ISO_8859_1);
    /** The /delay body: a prefix of this many {@code x}s, never copied. */
    static final byte[] XS = new byte[MAX_BODY];
    private static final AtomicLong TENTH = new AtomicLong();

    static {
        Arrays.fill(XS, (byte) 'x');
    }

    /** /delay?ms=N: 0..60000, default 0; -1 if invalid (answer 400). */
    static long delayMs(String query) {
        return queryInt(query, "ms", 0, MAX_MS, 0);
    }

    /** /delay?bytes=B: 0..1 MiB, default 0; -1 if invalid (answer 400). */
    static int delayBytes(String query) {
        return (int) queryInt(query, "bytes", 0, MAX_BODY, 0);
    }

    /** /tenth?ms=N: 0..60000, default 2000; -1 if invalid (answer 400). */
    static long tenthMs(String query) {
        return queryInt(query, "ms", 0, MAX_MS, 2000);
    }

    /** /compress?kb=N: 1..4096, required; -1 if missing or invalid (answer 400). */
    static int compressKb(String query) {
        return (int) queryInt(query, "kb", 1, MAX_KB, -1);
    }

    /**
     * The first {@code kb} KiB of $COMPRESS_FILE, gzipped (RFC 1952) on this call: never cached.
     * The JDK's GZIPOutputStream, whose Deflater runs the zlib the JDK uses (the system's libz on
     * Debian's OpenJDK, a bundled copy in Temurin) at Deflater.DEFAULT_COMPRESSION, zlib's level 6,
     * on the calling thread. Null if the file cannot be read (answer 500).
     */
    static byte[] compressGzip(int kb) {
        byte[] doc = CompressFile.DOC;
        if (doc == null) return null;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(out)) {
            gzip.write(doc, 0, Math.min(kb * 1024, doc.length));
        } catch (IOException e) {   // a ByteArrayOutputStream never throws
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /** $COMPRESS_FILE, read once, at the first /compress (the holder class loads then). */
    private static final class CompressFile {
        static final byte[] DOC = read();

        private static byte[] read() {
            String name = System.getenv("COMPRESS_FILE");
            if (name == null || name.isEmpty()) {
                System.err.println("/compress: $COMPRESS_FILE is not set");
                return null;
            }
            try {
                return Files.readAllBytes(Path.of(name));
            } catch (IOException e) {
                System.err.println("/compress: cannot read $COMPRESS_FILE: " + e);
                return null;
            }
        }
    }

    /** The next value of the /tenth counter, shared by the whole process (no lost updates). */
    static long nextTenth() {
        return TENTH.incrementAndGet();
    }

    /** Whether the request that got counter value {@code count} waits before answering. */
    static boolean tenthWaits(long count) {
        return count % 10 == 0;
    }

    /** Value of query parameter {@code key} in [min, max]; {@code dflt} if absent; -1 if invalid. */
    static long queryInt(String query, String key, long min, long max, long dflt) {
        long result = dflt;
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            if (!k.equals(key)) continue;
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            if (v.isEmpty() || v.length() > 9) return -1;
            for (int i = 0; i < v.length(); i++)
                if (v.charAt(i) < '0' || v.charAt(i) > '9') return -1;
            result = Long.parseLong(v);
            if (result < min || result > max) return -1;
        }
        return result;
    }
}
