// The database endpoints (SPEC.md, "Database endpoints") on Mono's ADO.NET provider for ODBC,
// System.Data.Odbc, over unixODBC and PostgreSQL's own ODBC driver (psqlODBC): Npgsql, what .NET
// users deploy, comes from NuGet, which is not reachable here; this is the PostgreSQL path Mono
// and Debian ship. The calls block the pool thread serving the request until PostgreSQL answers.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Data;
using System.Data.Odbc;
using System.IO;
using System.Net;
using System.Runtime.Serialization;
using System.Runtime.Serialization.Json;
using System.Text;

[DataContract]
class World
{
    [DataMember(Name = "id", Order = 1)] public int Id;
    [DataMember(Name = "randomNumber", Order = 2)] public int RandomNumber;
}

// One pooled connection with its three commands, prepared once (SQLPrepare) and then executed
// with new parameter values.
class PooledConnection
{
    readonly OdbcCommand world, update, fortune;

    public PooledConnection(string connectionString)
    {
        var conn = new OdbcConnection(connectionString);
        conn.Open();
        world = Command(conn, "SELECT id, randomNumber FROM World WHERE id = ?", "id");
        update = Command(conn, "UPDATE World SET randomNumber = ? WHERE id = ?", "randomNumber", "id");
        fortune = Command(conn, "SELECT id, message FROM Fortune");
    }

    static OdbcCommand Command(OdbcConnection conn, string sql, params string[] parameters)
    {
        var cmd = new OdbcCommand(sql, conn);
        foreach (string name in parameters) cmd.Parameters.Add(name, OdbcType.Int);
        cmd.Prepare();
        return cmd;
    }

    public World Read(int id)
    {
        world.Parameters[0].Value = id;
        using (OdbcDataReader r = world.ExecuteReader())
        {
            r.Read();
            return new World { Id = r.GetInt32(0), RandomNumber = r.GetInt32(1) };
        }
    }

    public void Write(World w)
    {
        update.Parameters[0].Value = w.RandomNumber;
        update.Parameters[1].Value = w.Id;
        update.ExecuteNonQuery(); // autocommit: one statement, one transaction
    }

    public List<KeyValuePair<int, string>> Fortunes()
    {
        var list = new List<KeyValuePair<int, string>>();
        using (OdbcDataReader r = fortune.ExecuteReader())
            while (r.Read()) list.Add(new KeyValuePair<int, string>(r.GetInt32(0), r.GetString(1)));
        return list;
    }
}

static class Database
{
    const int WorldRows = 10000;
    const int MaxQueries = 500;
    static readonly DataContractJsonSerializer OneJson = new DataContractJsonSerializer(typeof(World));
    static readonly DataContractJsonSerializer ManyJson = new DataContractJsonSerializer(typeof(World[]));
    [ThreadStatic] static Random random;
    // System.Data.Odbc keeps no pool of its own (unixODBC's pooling is off by default): the row
    // keeps $DB_POOL connections, opened at start; a request takes one for all of its queries.
    static BlockingCollection<PooledConnection> pool; // null without $DATABASE_URL

    // Opens the pool from $DB_HOST, $DB_PORT, $DB_NAME, $DB_USER, $DB_PASSWORD (ODBC takes parts)
    // when $DATABASE_URL is set; returns an error line, or null.
    public static string Open()
    {
        if (string.IsNullOrEmpty(Environment.GetEnvironmentVariable("DATABASE_URL"))) return null;
        int size;
        if (!int.TryParse(Environment.GetEnvironmentVariable("DB_POOL"), out size) || size < 1)
            return "DB_POOL is not a positive integer; set it to the most connections this process may open";
        // A DSN-less connection string naming the driver odbc-postgresql registers with unixODBC.
        string cs = "Driver={PostgreSQL Unicode};Server=" + Env("DB_HOST") + ";Port=" + Env("DB_PORT") +
                    ";Database=" + Env("DB_NAME") + ";Uid=" + Env("DB_USER") + ";Pwd=" + Env("DB_PASSWORD");
        var connections = new BlockingCollection<PooledConnection>(new ConcurrentQueue<PooledConnection>());
        try
        {
            for (int i = 0; i < size; i++) connections.Add(new PooledConnection(cs));
        }
        catch (OdbcException e)
        {
            return "cannot open the database (" + e.Message.Trim() + "); check DATABASE_URL and DB_*";
        }
        pool = connections;
        return null;
    }

    static string Env(string name) { return Environment.GetEnvironmentVariable(name) ?? ""; }

    public static bool Configured { get { return pool != null; } }

    // ?queries=N clamped to 1..500; missing, empty, 0, negative or not a number is 1.
    public static int QueryCount(Dictionary<string, string> args)
    {
        string s;
        int n;
        if (!args.TryGetValue("queries", out s)) return 1;
        if (int.TryParse(s, out n)) return Math.Max(1, Math.Min(n, MaxQueries));
        foreach (char c in s) if (c < '0' || c > '9') return 1;
        return s.Length > 0 ? MaxQueries : 1; // digits too large for an int
    }

    static int RandomId()
    {
        if (random == null) random = new Random(Guid.NewGuid().GetHashCode());
        return random.Next(1, WorldRows + 1);
    }

    // Runs work on a pooled connection (waiting for one when all are taken).
    static T With<T>(Func<PooledConnection, T> work)
    {
        PooledConnection db = pool.Take();
        try { return work(db); }
        finally { pool.Add(db); }
    }

    public static byte[] One()
    {
        return Json(OneJson, With(db => db.Read(RandomId())));
    }

    public static byte[] Many(int n)
    {
        return Json(ManyJson, With(db => Read(db, n)));
    }

    // /updates: each row read with its own SELECT, then each new value written with its own UPDATE.
    public static byte[] Update(int n)
    {
        return Json(ManyJson, With(db =>
        {
            World[] rows = Read(db, n);
            foreach (World w in rows)
            {
                w.RandomNumber = RandomId();
                db.Write(w);
            }
            return rows;
        }));
    }

    static World[] Read(PooledConnection db, int n)
    {
        var rows = new World[n];
        for (int i = 0; i < n; i++) rows[i] = db.Read(RandomId());
        return rows;
    }

    static byte[] Json(DataContractJsonSerializer serializer, object value)
    {
        var json = new MemoryStream();
        serializer.WriteObject(json, value);
        return json.ToArray();
    }

    // /fortunes: the rows plus the request-time one, sorted by message (ordinal), each message
    // escaped with WebUtility.HtmlEncode (& < > " ' and more).
    public static byte[] FortunesPage()
    {
        List<KeyValuePair<int, string>> fortunes = With(db => db.Fortunes());
        fortunes.Add(new KeyValuePair<int, string>(0, "Additional fortune added at request time."));
        fortunes.Sort((a, b) => string.CompareOrdinal(a.Value, b.Value));
        var html = new StringBuilder("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>" +
                                     "<tr><th>id</th><th>message</th></tr>");
        foreach (var f in fortunes)
            html.Append("<tr><td>").Append(f.Key).Append("</td><td>").Append(WebUtility.HtmlEncode(f.Value)).Append("</td></tr>");
        html.Append("</table></body></html>");
        return Encoding.UTF8.GetBytes(html.ToString());
    }
}
