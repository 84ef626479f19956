/**
 * Child-process entry point that runs s3rver for the S3 adapter tests (started by
 * test/helpers/s3rver.ts). Run it as
 * `node --openssl-legacy-provider test/helpers/s3rver-server.mjs <directory> <bucket>`:
 * s3rver 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 only
 * offers through its legacy provider, so pagination fails without the flag. Running the
 * server in its own process keeps that flag out of the vitest workers.
 *
 * Protocol: listens on an ephemeral port on 127.0.0.1, prints one JSON line
 * `{"port":<number>}` on stdout once the bucket exists, and closes the server and exits
 * when its stdin ends (the parent closing the pipe, or dying).
 */
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
if (!directory || !bucket) {
  process.stderr.write('usage: s3rver-server.mjs <directory> <bucket>\n');
  process.exit(2);
}

const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  configureBuckets: [{ name: bucket, configs: [] }],
});

const address = await server.run();
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);

process.stdin.resume();
process.stdin.on('end', () => {
  server.close().finally(() => process.exit(0));
});
