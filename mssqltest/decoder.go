package mssqltest

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// decoder reads little-endian TDS fields from a payload. The first read past
// the end sets err and every later read returns zero values, so parsers can
// read a whole structure and check the error once.
type decoder struct {
	buf []byte
	pos int
	err error
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.pos {
		d.err = fmt.Errorf("%w: %s needs %d bytes at offset %d, %d left", errMalformed, what, n, d.pos, len(d.buf)-d.pos)
		return nil
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b
}

func (d *decoder) skip(n int, what string) { d.take(n, what) }

func (d *decoder) uint8(what string) uint8 {
	if b := d.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) uint16(what string) uint16 {
	if b := d.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) uint32(what string) uint32 {
	if b := d.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// ucs2 reads n UTF-16LE code units.
func (d *decoder) ucs2(n int, what string) string {
	return decodeUCS2(d.take(2*n, what))
}

// bVarChar reads a B_VARCHAR: a one-byte character count, then UTF-16LE.
func (d *decoder) bVarChar(what string) string {
	return d.ucs2(int(d.uint8(what)), what)
}

func (d *decoder) remaining() int { return len(d.buf) - d.pos }

// decodeUCS2 converts UTF-16LE bytes to a string; an odd trailing byte is ignored.
func decodeUCS2(b []byte) string {
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(units))
}

// encodeUCS2 converts a string to UTF-16LE bytes.
func encodeUCS2(s string) []byte {
	units := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(b[2*i:], u)
	}
	return b
}
