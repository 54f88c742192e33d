// DynamoDB Local has no option for the address it listens on: its DynamoDBProxyServer builds Jetty's
// `new Server(port)`, whose connector binds every interface, so a developer's tables would answer
// anyone on their network. This writes a small Java class (its bytecode, so that no JDK compiler is
// needed: a JRE runs it) that starts DynamoDB Local as its own main does, but sets the connector's
// host to loopback before the server starts. The equivalent Java:
//
//   public class OncelyLoopbackDynamoDbLocal {
//     public static void main(String[] args) throws Exception {
//       DynamoDBProxyServer server = ServerRunner.createServerFromCommandLineArgs(args);
//       Field jetty = DynamoDBProxyServer.class.getDeclaredField("server");
//       jetty.setAccessible(true);
//       ((ServerConnector) ((Server) jetty.get(server)).getConnectors()[0]).setHost(HOST);
//       server.start();
//     }
//   }
//
// DynamoDB Local's own main also configures its telemetry; left unconfigured here, it sends none (as
// `-disableTelemetry` asked). A DynamoDB Local whose classes differ fails at start with a
// NoSuchFieldError, NoSuchMethodError or ClassCastException on its stderr, never silently on every
// interface (test/sandbox/loopback.test.ts checks what every process of the sandbox listens on).

/** The launcher's class name, to pass to `java` with its directory on the class path. */
export const LOOPBACK_LAUNCHER_CLASS = 'OncelyLoopbackDynamoDbLocal';

const PROXY_SERVER = 'software/amazon/dynamodb/services/local/server/DynamoDBProxyServer';
const SERVER_RUNNER = 'software/amazon/dynamodb/services/local/main/ServerRunner';
const JETTY_SERVER = 'org/eclipse/jetty/server/Server';
const JETTY_CONNECTOR = 'org/eclipse/jetty/server/ServerConnector';

/** The bytes of `OncelyLoopbackDynamoDbLocal.class` (class file version 52, Java 8), listening on `host`. */
export function loopbackLauncherClass(host: string): Buffer {
  const pool = new ConstantPool();
  const thisClass = pool.classRef(LOOPBACK_LAUNCHER_CLASS);
  const superClass = pool.classRef('java/lang/Object');
  const createServer = pool.methodRef(
    SERVER_RUNNER,
    'createServerFromCommandLineArgs',
    `([Ljava/lang/String;)L${PROXY_SERVER};`,
  );
  const proxyServerClass = pool.classRef(PROXY_SERVER);
  const fieldName = pool.string('server');
  const getDeclaredField = pool.methodRef(
    'java/lang/Class',
    'getDeclaredField',
    '(Ljava/lang/String;)Ljava/lang/reflect/Field;',
  );
  const setAccessible = pool.methodRef('java/lang/reflect/Field', 'setAccessible', '(Z)V');
  const get = pool.methodRef('java/lang/reflect/Field', 'get', '(Ljava/lang/Object;)Ljava/lang/Object;');
  const jettyServer = pool.classRef(JETTY_SERVER);
  const getConnectors = pool.methodRef(
    JETTY_SERVER,
    'getConnectors',
    '()[Lorg/eclipse/jetty/server/Connector;',
  );
  const connectorClass = pool.classRef(JETTY_CONNECTOR);
  const hostString = pool.string(host);
  const setHost = pool.methodRef(JETTY_CONNECTOR, 'setHost', '(Ljava/lang/String;)V');
  const start = pool.methodRef(PROXY_SERVER, 'start', '()V');
  const mainName = pool.utf8('main');
  const mainDescriptor = pool.utf8('([Ljava/lang/String;)V');
  const codeName = pool.utf8('Code');

  // No branch and no handler: a class file of version 52 needs no StackMapTable then.
  const code = Buffer.concat([
    op(0x2a), // aload_0: args
    op(0xb8, u2(createServer)), // invokestatic ServerRunner.createServerFromCommandLineArgs
    op(0x4c), // astore_1: server
    op(0x13, u2(proxyServerClass)), // ldc_w DynamoDBProxyServer.class
    op(0x13, u2(fieldName)), // ldc_w "server"
    op(0xb6, u2(getDeclaredField)), // invokevirtual Class.getDeclaredField
    op(0x4d), // astore_2: jetty
    op(0x2c), // aload_2
    op(0x04), // iconst_1
    op(0xb6, u2(setAccessible)), // invokevirtual Field.setAccessible(true)
    op(0x2c), // aload_2
    op(0x2b), // aload_1
    op(0xb6, u2(get)), // invokevirtual Field.get(server)
    op(0xc0, u2(jettyServer)), // checkcast Server
    op(0xb6, u2(getConnectors)), // invokevirtual Server.getConnectors()
    op(0x03), // iconst_0
    op(0x32), // aaload
    op(0xc0, u2(connectorClass)), // checkcast ServerConnector
    op(0x13, u2(hostString)), // ldc_w host
    op(0xb6, u2(setHost)), // invokevirtual ServerConnector.setHost(host)
    op(0x2b), // aload_1
    op(0xb6, u2(start)), // invokevirtual DynamoDBProxyServer.start()
    op(0xb1), // return
  ]);
  const codeAttribute = Buffer.concat([
    u2(codeName),
    u4(2 + 2 + 4 + code.length + 2 + 2),
    u2(2), // max_stack
    u2(3), // max_locals: args, server, jetty
    u4(code.length),
    code,
    u2(0), // no exception table
    u2(0), // no attributes
  ]);
  return Buffer.concat([
    u4(0xcafebabe),
    u2(0), // minor version
    u2(52), // major version: Java 8
    pool.bytes(),
    u2(0x0021), // ACC_PUBLIC | ACC_SUPER
    u2(thisClass),
    u2(superClass),
    u2(0), // no interfaces
    u2(0), // no fields
    u2(1), // one method: main
    u2(0x0009), // ACC_PUBLIC | ACC_STATIC
    u2(mainName),
    u2(mainDescriptor),
    u2(1), // one attribute: its code
    codeAttribute,
    u2(0), // no class attributes
  ]);
}

/** A class file's constant pool: each entry added once, indexed from 1. */
class ConstantPool {
  readonly #entries: Buffer[] = [];
  readonly #indexes = new Map<string, number>();

  utf8(text: string): number {
    const bytes = Buffer.from(text, 'utf8');
    return this.#add(`utf8:${text}`, Buffer.concat([u1(1), u2(bytes.length), bytes]));
  }

  classRef(internalName: string): number {
    const name = this.utf8(internalName);
    return this.#add(`class:${internalName}`, Buffer.concat([u1(7), u2(name)]));
  }

  string(text: string): number {
    const value = this.utf8(text);
    return this.#add(`string:${text}`, Buffer.concat([u1(8), u2(value)]));
  }

  methodRef(owner: string, name: string, descriptor: string): number {
    const ownerClass = this.classRef(owner);
    const nameAndType = this.#add(
      `nat:${name}:${descriptor}`,
      Buffer.concat([u1(12), u2(this.utf8(name)), u2(this.utf8(descriptor))]),
    );
    return this.#add(
      `method:${owner}.${name}${descriptor}`,
      Buffer.concat([u1(10), u2(ownerClass), u2(nameAndType)]),
    );
  }

  bytes(): Buffer {
    return Buffer.concat([u2(this.#entries.length + 1), ...this.#entries]);
  }

  #add(key: string, entry: Buffer): number {
    const known = this.#indexes.get(key);
    if (known !== undefined) return known;
    this.#entries.push(entry);
    this.#indexes.set(key, this.#entries.length);
    return this.#entries.length;
  }
}

function op(opcode: number, operand: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([u1(opcode), operand]);
}

function u1(value: number): Buffer {
  return Buffer.from([value]);
}

function u2(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16BE(value);
  return buffer;
}

function u4(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}
