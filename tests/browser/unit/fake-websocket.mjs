// FakeWebSocket stands in for the browser's WebSocket in the unit tests:
// it records what the client sends, and the tests play the server.

export class FakeWebSocket {
  static instances = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.closedWith = null;
    FakeWebSocket.instances.push(this);
  }

  send(data) {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(data));
  }

  close(code, reason) {
    this.closedWith = { code, reason };
    this.readyState = 3;
  }

  // server side ---------------------------------------------------------
  accept(hello = {}) {
    this.readyState = 1;
    if (this.onopen) this.onopen({});
    this.push({ type: 'hello', userId: 'u1', node: 'n1', tickets: [], matches: [], ...hello });
  }

  push(frame) {
    this.onmessage({ data: JSON.stringify(frame) });
  }

  drop(code = 1006, reason = '') {
    this.readyState = 3;
    this.onclose({ code, reason });
  }

  /** lastSent is the newest frame of the given type the client sent. */
  lastSent(type) {
    return [...this.sent].reverse().find((f) => f.type === type);
  }

  static last() {
    return FakeWebSocket.instances[FakeWebSocket.instances.length - 1];
  }
}
