package memstream.neo4j;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Runs Neo4j Community embedded and serves Bolt, without authentication, until SIGTERM.
 *
 * <p>Usage: {@code Launcher <home dir> <bolt host> <bolt port> <page cache MiB>}. The heap is
 * set by the caller ({@code -Xmx}). Started and stopped by infra/neo4j_server.py, which waits
 * for a Bolt {@code RETURN 1} to call the database healthy.
 */
public final class Launcher {

  private Launcher() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 4) {
      System.err.println("usage: Launcher <home dir> <bolt host> <bolt port> <page cache MiB>");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    String host = args[1];
    int port = Integer.parseInt(args[2]);
    long pageCacheMiB = Long.parseLong(args[3]);

    DatabaseManagementService service =
        new DatabaseManagementServiceBuilder(home)
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
            .setConfig(GraphDatabaseSettings.auth_enabled, false)
            // Neo4j sizes its page cache from free RAM by default; on a shared
            // development machine that is far more than a test graph needs.
            .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMiB))
            .build();

    CountDownLatch stopped = new CountDownLatch(1);
    // SIGTERM runs shutdown hooks: close the store cleanly so the next start needs no recovery.
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  service.shutdown();
                  stopped.countDown();
                },
                "memstream-neo4j-shutdown"));
    System.out.println(
        "memstream neo4j launcher: bolt on "
            + host
            + ":"
            + port
            + "; Neo4j's own log: "
            + home.resolve("logs").resolve("debug.log"));
    System.out.flush();
    stopped.await();
  }
}
