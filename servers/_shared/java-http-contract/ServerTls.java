import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * SPEC.md's TLS switch, the same for every java-* row: with {@code $TLS_CERT} and
 * {@code $TLS_KEY} set the row serves TLS on $PORT instead of plaintext. JSSE loads
 * key stores, so the rows that hand JSSE an {@link SSLContext} read the same key and
 * certificate from {@code $TLS_PKCS12} (password {@code $TLS_PKCS12_PASSWORD}) into a
 * PKCS12 KeyStore and the JDK's default KeyManagerFactory. Protocols and cipher suites
 * stay the JDK's defaults: TLS 1.3 and 1.2 are on, TLS 1.0 and 1.1 are off through the
 * JDK's own {@code jdk.tls.disabledAlgorithms}.
 */
final class ServerTls {
    private ServerTls() {
    }

    /** Whether $TLS_CERT and $TLS_KEY ask for TLS. */
    static boolean requested() {
        return !env("TLS_CERT").isEmpty() && !env("TLS_KEY").isEmpty();
    }

    /** The server's SSLContext, or null when TLS is not asked for; a bad key store exits with one line. */
    static SSLContext context(ServerEnv server) {
        if (!requested()) return null;
        String file = env("TLS_PKCS12");
        if (file.isEmpty()) {
            fail(server, "$TLS_CERT and $TLS_KEY are set but $TLS_PKCS12 is not; set $TLS_PKCS12 "
                    + "(the same key and certificate as PKCS#12) and $TLS_PKCS12_PASSWORD");
        }
        char[] password = env("TLS_PKCS12_PASSWORD").toCharArray();
        try (InputStream in = Files.newInputStream(Path.of(file))) {
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(in, password);
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, password);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), null, null);
            return context;
        } catch (IOException | GeneralSecurityException e) {
            fail(server, "cannot load $TLS_PKCS12 " + file + " (" + e
                    + "); check the file and $TLS_PKCS12_PASSWORD");
            return null;   // not reached: fail exits
        }
    }

    private static String env(String name) {
        String v = System.getenv(name);
        return v == null ? "" : v;
    }

    private static void fail(ServerEnv server, String why) {
        System.err.println(server.name() + ": " + why);
        System.exit(1);
    }
}
