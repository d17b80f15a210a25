/** A parsed request: what {@link Routes} needs to answer it. */
record Request(String method, String path, String query, boolean http10, boolean keepAlive, byte[] body) {
}
