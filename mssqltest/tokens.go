package mssqltest

import (
	"encoding/binary"
	"unicode/utf16"
)

// Token types (MS-TDS 2.2.7) this server writes.
const (
	tokenReturnStatus byte = 0x79
	tokenColMetadata  byte = 0x81
	tokenError        byte = 0xAA
	tokenLoginAck     byte = 0xAD
	tokenNBCRow       byte = 0xD2
	tokenEnvChange    byte = 0xE3
	tokenDone         byte = 0xFD
	tokenDoneProc     byte = 0xFE
)

// DONE status bits (MS-TDS 2.2.7.6).
const (
	doneFinal uint16 = 0x00
	doneMore  uint16 = 0x01
	doneError uint16 = 0x02
	doneCount uint16 = 0x10
	doneAttn  uint16 = 0x20
)

// ENVCHANGE types (MS-TDS 2.2.7.9).
const (
	envDatabase       byte = 1
	envLanguage       byte = 2
	envPacketSize     byte = 4
	envCollation      byte = 7
	envBeginTran      byte = 8
	envCommitTran     byte = 9
	envRollbackTran   byte = 10
	tdsVersion74           = 0x74000004
	loginAckInterface      = 1 // SQL_TSQL
	serverProgramName      = "Microsoft SQL Server"
)

// collationLatin1 is SQL_Latin1_General_CP1_CI_AS: LCID 0x0409 with the
// ignore-case, ignore-kana and ignore-width flags, sort id 52.
var collationLatin1 = [5]byte{0x09, 0x04, 0xD0, 0x00, 0x34}

// serverError is the content of an ERROR token.
type serverError struct {
	number  int32
	state   uint8
	class   uint8
	message string
	server  string
	proc    string
	line    int32
}

// tokenWriter appends tokens to one server message.
type tokenWriter struct {
	buf []byte
}

func (t *tokenWriter) byte(b byte) { t.buf = append(t.buf, b) }

func (t *tokenWriter) uint16(v uint16) { t.buf = binary.LittleEndian.AppendUint16(t.buf, v) }

func (t *tokenWriter) uint32(v uint32) { t.buf = binary.LittleEndian.AppendUint32(t.buf, v) }

func (t *tokenWriter) uint64(v uint64) { t.buf = binary.LittleEndian.AppendUint64(t.buf, v) }

// bVarChar appends a B_VARCHAR, cut to the 255 characters it can hold.
func (t *tokenWriter) bVarChar(s string) {
	units := utf16Prefix(s, 0xFF)
	t.byte(byte(len(units)))
	t.utf16(units)
}

// usVarChar appends a US_VARCHAR, cut to the 65535 characters it can hold.
func (t *tokenWriter) usVarChar(s string) {
	units := utf16Prefix(s, 0xFFFF)
	t.uint16(uint16(len(units)))
	t.utf16(units)
}

// utf16Prefix returns the first n UTF-16 code units of s at the most.
func utf16Prefix(s string, n int) []uint16 {
	units := utf16.Encode([]rune(s))
	return units[:min(len(units), n)]
}

// utf16 appends UTF-16 code units, little-endian.
func (t *tokenWriter) utf16(units []uint16) {
	for _, u := range units {
		t.uint16(u)
	}
}

// bVarByte appends a B_VARBYTE.
func (t *tokenWriter) bVarByte(b []byte) {
	t.byte(byte(len(b)))
	t.buf = append(t.buf, b...)
}

// withLength writes a token whose body is preceded by its USHORT length.
func (t *tokenWriter) withLength(token byte, body func()) {
	t.byte(token)
	at := len(t.buf)
	t.uint16(0)
	body()
	binary.LittleEndian.PutUint16(t.buf[at:], uint16(len(t.buf)-at-2))
}

func (t *tokenWriter) done(token byte, status, curCmd uint16, count uint64) {
	t.byte(token)
	t.uint16(status)
	t.uint16(curCmd)
	t.uint64(count)
}

func (t *tokenWriter) error(e serverError) {
	t.withLength(tokenError, func() {
		t.uint32(uint32(e.number))
		t.byte(e.state)
		t.byte(e.class)
		t.usVarChar(e.message)
		t.bVarChar(e.server)
		t.bVarChar(e.proc)
		t.uint32(uint32(e.line))
	})
}

func (t *tokenWriter) envChangeString(typ byte, newValue, oldValue string) {
	t.withLength(tokenEnvChange, func() {
		t.byte(typ)
		t.bVarChar(newValue)
		t.bVarChar(oldValue)
	})
}

func (t *tokenWriter) envChangeCollation() {
	t.withLength(tokenEnvChange, func() {
		t.byte(envCollation)
		t.bVarByte(collationLatin1[:])
		t.bVarByte(nil)
	})
}

// envChangeTransaction reports a transaction that began (new descriptor,
// empty old value) or ended (empty new value, old descriptor).
func (t *tokenWriter) envChangeTransaction(typ byte, descriptor uint64) {
	id := binary.LittleEndian.AppendUint64(nil, descriptor)
	t.withLength(tokenEnvChange, func() {
		t.byte(typ)
		if typ == envBeginTran {
			t.bVarByte(id)
			t.bVarByte(nil)
		} else {
			t.bVarByte(nil)
			t.bVarByte(id)
		}
	})
}

func (t *tokenWriter) loginAck() {
	t.withLength(tokenLoginAck, func() {
		t.byte(loginAckInterface)
		t.buf = binary.BigEndian.AppendUint32(t.buf, tdsVersion74)
		t.bVarChar(serverProgramName)
		t.byte(versionMajor)
		t.byte(versionMinor)
		t.byte(byte(versionBuild >> 8))
		t.byte(byte(versionBuild & 0xFF))
	})
}

func (t *tokenWriter) returnStatus(status int32) {
	t.byte(tokenReturnStatus)
	t.uint32(uint32(status))
}
