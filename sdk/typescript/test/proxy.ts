import net from "node:net";

/**
 * CutProxy is a TCP proxy in front of the suite whose connections a test
 * can cut, as a network failure would: the client sees its response end
 * mid-stream while the server goes on.
 */
export class CutProxy {
  readonly url: string;
  /** Connections accepted so far. */
  accepted = 0;
  #server: net.Server;
  #open = new Set<net.Socket>();

  private constructor(server: net.Server, url: string) {
    this.#server = server;
    this.url = url;
  }

  /** start listens on a free loopback port and forwards to target ("http://host:port"). */
  static async start(target: string): Promise<CutProxy> {
    const { hostname, port } = new URL(target);
    let proxy: CutProxy | undefined;
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(port), hostname);
      proxy!.accepted++;
      for (const s of [client, upstream]) {
        proxy!.#open.add(s);
        s.once("close", () => proxy!.#open.delete(s));
        // A cut socket errors on the other side's pending writes.
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const addr = server.address() as net.AddressInfo;
    proxy = new CutProxy(server, `http://127.0.0.1:${addr.port}`);
    return proxy;
  }

  /** cut destroys every open connection; new ones are still accepted. */
  cut(): number {
    const n = this.#open.size / 2;
    for (const s of this.#open) s.destroy();
    this.#open.clear();
    return n;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
