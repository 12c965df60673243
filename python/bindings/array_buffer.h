#pragma once
// numpy arrays <-> tide's BufferRefs, without copying either way:
//  * an array handed to tide becomes a BufferRef that holds a reference to
//    the array (released under the GIL, from whichever thread drops it last);
//  * bytes tide holds (a leased transfer buffer, a column's values) become an
//    array whose base keeps tide's owner alive, and the object that owns the
//    pool they may live in (so a pool never goes before its leases).
// Element types map one to one, except bf16, which numpy lacks: it travels
// as int16 with its tide dtype named beside it (the Python layer views it
// as torch.bfloat16).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "engine/data/column.h"
#include "engine/data/dtype.h"

namespace tide::python {

// The tide dtype of a numpy dtype; kInvalidArgument naming `where` for any
// other (complex, object, strings, datetime).
data::DType dtypeOfNumpy(const pybind11::dtype& dt, const std::string& where);
data::DType dtypeOfArray(const pybind11::array& a, const std::string& where);
// The numpy dtype tide's dtype travels as.
pybind11::dtype numpyDType(data::DType t);

// A C-contiguous array's bytes (kInvalidArgument naming `where` otherwise).
data::BufferRef refFromArray(const pybind11::array& a, const std::string& where);

// An array over `ref`'s bytes with that dtype and shape, kept alive by
// `ref`'s owner and `keep`; read-only unless `writable`.
pybind11::array arrayView(const data::BufferRef& ref, data::DType t,
                          const std::vector<int64_t>& shape, pybind11::object keep,
                          bool writable = false);

}  // namespace tide::python
