//! NumPy arrays as flat memory: the probe buffer fprev writes into, and the arrays it
//! reads (`Tree.replay`, `fprev.exact`).
//!
//! An array is taken through its `__array_interface__` (no NumPy C API, so the wheel is
//! abi3 and needs no `numpy` crate): its data address, shape, strides, item size and
//! whether it is read-only. Only C-contiguous one-dimensional (or, for matrices,
//! exactly-shaped) arrays are accepted; the array object is kept alive for as long as the
//! address is used, and NumPy refuses to resize an array that something references.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::dtype::Dtype;

/// A contiguous NumPy array of `len` items of `dtype`, held alive.
pub struct Flat {
    /// The array (kept so its memory stays valid).
    _array: Py<PyAny>,
    /// Address of item 0.
    addr: usize,
    /// Items.
    pub len: usize,
    /// The items' format.
    pub dtype: Dtype,
    /// Items stored in the other byte order (a big-endian array read here): every read
    /// swaps them, so such an array is read in place like any other.
    swapped: bool,
}

/// What [`interface`] found: the data address, whether it is read-only, and whether
/// its items are in the other byte order.
struct Interface {
    addr: usize,
    read_only: bool,
    swapped: bool,
}

/// The `__array_interface__` of `array`, checked to describe `len` contiguous items of
/// `width` bytes, in the machine's byte order unless `swapped_ok`.
fn interface(
    array: &Bound<'_, PyAny>,
    shape: &[usize],
    width: usize,
    swapped_ok: bool,
) -> PyResult<Interface> {
    let iface = array
        .getattr("__array_interface__")
        .map_err(|_| PyTypeError::new_err("expected a NumPy array"))?;
    let iface = iface.cast::<PyDict>()?;
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        iface
            .get_item(key)?
            .ok_or_else(|| PyTypeError::new_err(format!("__array_interface__ has no {key:?}")))
    };
    let got_shape: Vec<usize> = get("shape")?.extract()?;
    if got_shape != shape {
        return Err(PyValueError::new_err(format!(
            "expected an array of shape {shape:?}, got {got_shape:?}"
        )));
    }
    let typestr: String = get("typestr")?.extract()?;
    let item: usize = typestr.get(2..).and_then(|s| s.parse().ok()).unwrap_or(0);
    let native = typestr.starts_with('<') || typestr.starts_with('|') || typestr.starts_with('=');
    let swapped = typestr.starts_with('>') && item > 1;
    if item != width || !(native || swapped && swapped_ok) || cfg!(target_endian = "big") {
        return Err(PyTypeError::new_err(format!(
            "expected little-endian items of {width} bytes, got typestr {typestr:?}"
        )));
    }
    let strides = get("strides")?;
    if !strides.is_none() {
        // NumPy reports None for C-contiguous arrays; otherwise check the strides
        let strides: Vec<isize> = strides.extract()?;
        let mut expect = width as isize;
        for (s, d) in strides.iter().zip(shape).rev() {
            if *d > 1 && *s != expect {
                return Err(PyValueError::new_err("expected a C-contiguous array"));
            }
            expect *= *d as isize;
        }
    }
    let data = get("data")?;
    let data = data.cast::<PyTuple>()?;
    let addr: usize = data.get_item(0)?.extract()?;
    let read_only: bool = data.get_item(1)?.extract()?;
    let items: usize = shape.iter().product();
    if addr == 0 && items > 0 {
        return Err(PyValueError::new_err("the array has no data"));
    }
    Ok(Interface {
        addr,
        read_only,
        swapped,
    })
}

/// Values converted to `f64` at a time by [`Flat::for_each_chunk`]: half a megabyte,
/// so that reading an array needs no copy of it.
pub const CHUNK: usize = 1 << 16;

impl Flat {
    /// `array`, which must be a writable C-contiguous array of `shape` whose items are
    /// `dtype` wide.
    pub fn writable(array: &Bound<'_, PyAny>, shape: &[usize], dtype: Dtype) -> PyResult<Flat> {
        let found = interface(array, shape, dtype.width(), false)?;
        if found.read_only {
            return Err(PyValueError::new_err("the probe buffer is read-only"));
        }
        Ok(Flat {
            _array: array.clone().unbind(),
            addr: found.addr,
            len: shape.iter().product(),
            dtype,
            swapped: false,
        })
    }

    /// A contiguous copy (or the array itself) of any 1-D array-like of floats, read as
    /// its own dtype: float64, float32, float16 or bfloat16, in either byte order.
    /// Complex arrays are refused: the conversion to float64 would keep the real parts
    /// with only a warning.
    pub fn readable(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Flat> {
        let np = py.import("numpy")?;
        let array = np.getattr("ascontiguousarray")?.call1((x,))?;
        let kind: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
        let name: String = array.getattr("dtype")?.getattr("name")?.extract()?;
        if kind == "c" {
            return Err(PyTypeError::new_err(format!(
                "expected real numbers, got a {name} array (take its .real or abs() first)"
            )));
        }
        let dtype = match Dtype::parse(&name) {
            Ok(d) => d,
            Err(_) => {
                // integers and other kinds: as float64, which is what the sum means
                return Flat::readable(
                    py,
                    &np.getattr("asarray")?
                        .call1((array, np.getattr("float64")?))?,
                );
            }
        };
        let ndim: usize = array.getattr("ndim")?.extract()?;
        if ndim != 1 {
            return Err(PyValueError::new_err(format!(
                "expected a one-dimensional array, got {ndim} dimensions"
            )));
        }
        let len: usize = array.getattr("size")?.extract()?;
        let found = interface(&array, &[len], dtype.width(), true)?;
        Ok(Flat {
            _array: array.unbind(),
            addr: found.addr,
            len,
            dtype,
            swapped: found.swapped,
        })
    }

    /// The raw bits of item `i` (the low `width` bytes).
    pub fn get_bits(&self, i: usize) -> u64 {
        assert!(i < self.len, "index {i} out of {}", self.len);
        // SAFETY: `addr` is the data of a live array (held in `_array`) of `len`
        // contiguous items of `width` bytes, checked in `interface`; `i < len`.
        // Unaligned reads, since NumPy does not promise alignment for every array.
        let bits = unsafe {
            let p = (self.addr as *const u8).add(i * self.dtype.width());
            match self.dtype.width() {
                8 => std::ptr::read_unaligned(p as *const u64),
                4 => u64::from(std::ptr::read_unaligned(p as *const u32)),
                2 => u64::from(std::ptr::read_unaligned(p as *const u16)),
                _ => u64::from(std::ptr::read(p)),
            }
        };
        if !self.swapped {
            return bits;
        }
        match self.dtype.width() {
            8 => bits.swap_bytes(),
            4 => u64::from((bits as u32).swap_bytes()),
            2 => u64::from((bits as u16).swap_bytes()),
            _ => bits,
        }
    }

    /// Write raw bits (the low `width` bytes) into item `i`.
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        assert!(i < self.len, "index {i} out of {}", self.len);
        // only `writable` arrays are written, and those are in the machine's order
        debug_assert!(!self.swapped);
        // SAFETY: as in `get_bits`; the array was checked writable, and it is written
        // only while the GIL is held, as NumPy expects.
        unsafe {
            let p = (self.addr as *mut u8).add(i * self.dtype.width());
            match self.dtype.width() {
                8 => std::ptr::write_unaligned(p as *mut u64, bits),
                4 => std::ptr::write_unaligned(p as *mut u32, bits as u32),
                2 => std::ptr::write_unaligned(p as *mut u16, bits as u16),
                _ => std::ptr::write(p, bits as u8),
            }
        }
    }

    /// Every item as `f64` (exact for every supported dtype).
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len)
            .map(|i| self.dtype.bits_to_f64(self.get_bits(i)))
            .collect()
    }

    /// Items `start..` (up to [`CHUNK`] of them) as `f64` into `buf`, replacing what it
    /// held: a sum read chunk by chunk needs no `f64` copy of the whole array (eight
    /// bytes an item, twice a float32 array's size).
    pub fn read_chunk(&self, start: usize, buf: &mut Vec<f64>) {
        buf.clear();
        let end = start.saturating_add(CHUNK).min(self.len);
        buf.extend((start..end).map(|i| self.dtype.bits_to_f64(self.get_bits(i))));
    }
}
