import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * The Date header value SPEC.md requires on every response, IMF-fixdate
 * ("Sun, 06 Nov 1994 08:49:37 GMT"), formatted at most once a second and shared by
 * every thread. The pattern is spelled out because the JDK's RFC_1123_DATE_TIME
 * writes a one-digit day ("6 Nov"), which IMF-fixdate does not allow.
 */
final class HttpDate {
    private static final DateTimeFormatter FORMAT = DateTimeFormatter
            .ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private record Stamp(long second, String text) {
    }

    private static volatile Stamp stamp = new Stamp(-1, "");

    private HttpDate() {
    }

    static String now() {
        long second = System.currentTimeMillis() / 1000;
        Stamp s = stamp;
        if (s.second() != second) {   // a new second: format once (a race formats it twice, harmlessly)
            s = new Stamp(second, FORMAT.format(Instant.ofEpochSecond(second)));
            stamp = s;
        }
        return s.text();
    }
}
