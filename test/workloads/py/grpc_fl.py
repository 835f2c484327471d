"""grpc_fl server|client [options]: a federated round over one gRPC stream, as Flower's clients
run it: the client opens a bidirectional stream to the server and its main thread blocks in
that stream between rounds, waiting for the next model; no Python runs in it meanwhile.

server --port P --clients N --rounds R [--width W]: waits for N clients, then each round sends
the global model (hello-pt's SimpleNetwork with hidden layers W wide, its state_dict as
torch.save bytes) to every client over its stream, waits for all their updates, averages them
(FedAvg) and evaluates the result on a held-out set before the next round; at the end it sends
"done". It prints "start T" once all clients have joined and "boundary R T" after each
round's evaluation.

client --port P [--train N] [--test N] [--epochs E] [--batch B] [--seed S]: per model
received, evaluates it, trains E epochs on a stand-in of CIFAR-10 (random images, made once),
and sends its weights back on the stream. The client prints "start T" once connected and
"boundary R T" right after handing each round's update to the stream (T: CLOCK_MONOTONIC
microseconds), the truth of test/traces/README.md. Needs python3-grpcio and python3-torch."""
import argparse
import io
import queue
import struct
import sys
import time
from concurrent import futures

import grpc
import torch
from torch import nn

METHOD = "/roundtrim.Fl/Join"
DONE = b"done"
# Models of a few MiB: above gRPC's default 4 MiB limit for the larger widths.
OPTIONS = [
    ("grpc.max_send_message_length", 256 << 20),
    ("grpc.max_receive_message_length", 256 << 20),
]


def now_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


class Net(nn.Module):
    """hello-pt's SimpleNetwork, its two hidden layers `width` wide."""

    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def dataset(n, generator):
    images = torch.rand((n, 3, 32, 32), generator=generator) * 2 - 1
    labels = torch.randint(0, 10, (n,), generator=generator)
    return torch.utils.data.TensorDataset(images, labels)


def pack(round_number, state):
    buf = io.BytesIO()
    torch.save(state, buf)
    return struct.pack("<I", round_number) + buf.getvalue()


def unpack(message):
    return struct.unpack_from("<I", message)[0], torch.load(io.BytesIO(message[4:]))


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
    return correct


class Server:
    def __init__(self, clients):
        self.joined = queue.Queue()  # each client's outbox
        self.updates = queue.Queue()
        self.clients = clients

    def join(self, requests, context):
        next(requests)  # the client's hello
        outbox = queue.Queue()
        self.joined.put(outbox)
        while True:
            message = outbox.get()
            yield message
            if message == DONE:
                return
            self.updates.put(next(requests))

    def run(self, rounds, width):
        model = Net(width)
        held_out = dataset(1000, torch.Generator().manual_seed(0))
        test_loader = torch.utils.data.DataLoader(held_out, batch_size=64)
        outboxes = [self.joined.get() for _ in range(self.clients)]
        print("start %d" % now_us(), flush=True)
        for r in range(1, rounds + 1):
            message = pack(r, model.state_dict())
            for outbox in outboxes:
                outbox.put(message)
            states = [unpack(self.updates.get())[1] for _ in outboxes]
            model.load_state_dict({k: sum(s[k] for s in states) / len(states) for k in states[0]})
            evaluate(model, test_loader)
            print("boundary %d %d" % (r, now_us()), flush=True)
        for outbox in outboxes:
            outbox.put(DONE)


def serve(args):
    torch.set_num_threads(1)
    server = Server(args.clients)
    handler = grpc.method_handlers_generic_handler(
        "roundtrim.Fl", {"Join": grpc.stream_stream_rpc_method_handler(server.join)}
    )
    rpc = grpc.server(futures.ThreadPoolExecutor(max_workers=args.clients + 2), options=OPTIONS)
    rpc.add_generic_rpc_handlers((handler,))
    rpc.add_insecure_port("127.0.0.1:%d" % args.port)
    rpc.start()
    server.run(args.rounds, args.width)
    rpc.stop(grace=5).wait()
    return 0


def client(args):
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(
        dataset(args.train, generator), batch_size=args.batch, shuffle=True, generator=generator
    )
    test_loader = torch.utils.data.DataLoader(dataset(args.test, generator), batch_size=args.batch)
    outbox = queue.Queue()

    def requests():
        yield b"hello"
        while True:
            message = outbox.get()
            if message is None:
                return
            yield message

    channel = grpc.insecure_channel("127.0.0.1:%d" % args.port, options=OPTIONS)
    grpc.channel_ready_future(channel).result(timeout=60)
    stream = channel.stream_stream(METHOD)(requests())
    print("start %d" % now_us(), flush=True)
    model = None
    loss_fn = nn.CrossEntropyLoss()
    for message in stream:  # the main thread waits here, inside gRPC, between rounds
        if message == DONE:
            break
        r, state = unpack(message)
        if model is None:
            model = Net(state["fc1.weight"].shape[0])
        model.load_state_dict(state)
        evaluate(model, test_loader)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        model.train()
        for _ in range(args.epochs):
            for images, labels in train_loader:
                optimizer.zero_grad()
                loss_fn(model(images), labels).backward()
                optimizer.step()
        outbox.put(pack(r, model.state_dict()))
        print("boundary %d %d" % (r, now_us()), flush=True)
    outbox.put(None)
    channel.close()
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--test", type=int, default=250)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    return serve(args) if args.role == "server" else client(args)


if __name__ == "__main__":
    sys.exit(main())
