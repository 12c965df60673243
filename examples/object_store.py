"""The baseline's mechanism, from the standard library: an object store put
and get as Ray's does them, pickle protocol 5 with out-of-band buffers in a
shared-memory segment, read back with the buffers in place (no copy on the
way out). A fresh segment per object; Ray's plasma store reuses an arena,
which saves the page faults of a new segment but not the copies.
"""

import pickle

# Every process of the run shares the parent's resource tracker: a segment
# is registered once, by its creator, and unregistered once, by the unlink of
# its last reader.


def put_object(obj):
    """pickle-5 with out-of-band buffers into one fresh shared-memory
    segment (an object-store put): returns the reference a reader needs."""
    from multiprocessing import shared_memory

    bufs = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    shm = shared_memory.SharedMemory(create=True,
                                     size=max(1, len(head) + sum(r.nbytes for r in raws)))
    shm.buf[:len(head)] = head
    at, spans = len(head), []
    for r in raws:
        shm.buf[at:at + r.nbytes] = r
        spans.append((at, r.nbytes))
        at += r.nbytes
    shm.close()
    return shm.name, len(head), spans


def get_object(ref, use, unlink=True):
    """The object read back with its buffers in place (an object-store get);
    `use(obj)` must copy what it keeps before the segment goes."""
    from multiprocessing import shared_memory

    name, head, spans = ref
    shm = shared_memory.SharedMemory(name=name)
    buf = shm.buf
    obj = pickle.loads(buf[:head], buffers=[buf[a:a + n] for a, n in spans])
    out = use(obj)
    del obj
    shm.close()
    if unlink:
        shm.unlink()
    return out


def unlink_object(ref):
    from multiprocessing import shared_memory

    shm = shared_memory.SharedMemory(name=ref[0])
    shm.close()
    shm.unlink()
