# --tensorboard-dir writes one TensorBoard event file (TFRecords of Event protobufs, tb_events.h):
# checked here without TensorBoard (the interop test reads it with TensorBoard's own reader):
# the name, every record's masked CRC-32C, the file version first, then the scalars (tag,
# step) Megatron's training_log writes, each also "vs samples" (step = consumed samples);
# with --no-log-loss-scale-to-tensorboard the same without loss-scale.
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 2 --lr 1e-3 --train-iters 2
   --tokenizer-type NullTokenizer --vocab-size 64 --mock-data --eval-iters 1 --eval-interval 2"
"$MG_BIN/mg-train" $M --tensorboard-dir tb >/dev/null 2>&1
echo "exit $?"
ls tb | sed -E 's/^events\.out\.tfevents\.[0-9]{10}\.[^.]+\.[0-9]+\.0$/events.out.tfevents.TIME.HOST.PID.0/'
"$MG_BIN/mg-train" $M --tensorboard-dir tb2 --no-log-loss-scale-to-tensorboard >/dev/null 2>&1
echo "exit $?"
python3 - tb/* tb2/* <<'PY'
import struct, sys

def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return c ^ 0xffffffff

def masked(c):
    return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff

def fields(b):  # protobuf wire format: (field, wire type, value)
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        else:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        yield f, t, v

def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7f) << s
        s += 7
        i += 1
        if b[i - 1] < 0x80:
            return v, i

def records(path):  # (step, tag) of each scalar; the file version first
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        head = data[i:i + 8]
        n, = struct.unpack("<Q", head)
        ok = struct.unpack("<I", data[i + 8:i + 12])[0] == masked(crc32c(head))
        body = data[i + 12:i + 12 + n]
        ok &= struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == masked(crc32c(body))
        i += 16 + n
        ev = {f: v for f, _, v in fields(body)}
        if 3 in ev:
            yield "crc %s file_version %s" % (ok, ev[3].decode())
            continue
        val = dict((f, v) for f, _, v in fields(dict((f, v) for f, _, v in fields(ev[5]))[1]))
        yield "crc %s step %d tag %s float %s" % (ok, ev.get(2, 0), val[1].decode(),
                                                   len(val[2]) == 4)

print("\n".join(records(sys.argv[1])))
print("--no-log-loss-scale-to-tensorboard:")
print("\n".join(records(sys.argv[2])))
PY
