package org.tachyon.neo4j;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

/**
 * Neo4j Community with Bolt on a loopback port, no authentication, its
 * files under one home directory.
 *
 * <p>Usage: {@code Server <home> <port> [settings file]}: the file holds
 * further Neo4j settings, {@code name=value} lines as in neo4j.conf.
 * Prints {@code READY <bolt uri>}
 * once the default database is available; shuts down cleanly on SIGTERM or
 * SIGINT (the JVM's shutdown hook), so committed transactions are on disk.
 */
public final class Server {
    private Server() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println(
                "usage: Server <home directory> <bolt port> [settings file]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = Integer.parseInt(args[1]);
        DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home);
        if (args.length == 3) {
            builder.loadPropertiesFromFile(Path.of(args[2]));
        }
        DatabaseManagementService dbms = builder
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address,
                           new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.encryption_level,
                           BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            dbms.shutdown();
            stopped.countDown();
        }, "neo4j-shutdown"));
        dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME)
            .executeTransactionally("RETURN 1");
        System.out.println("READY bolt://127.0.0.1:" + port);
        System.out.flush();
        stopped.await();
    }
}
