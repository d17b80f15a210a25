/** A request we refuse; the connection is closed after the answer. */
final class HttpError extends Exception {
    final int status;

    HttpError(int status, String msg) {
        super(msg, null, false, false);
        this.status = status;
    }
}
