package mssqltest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allHeaders is the ALL_HEADERS block go-mssqldb puts in front of every
// request: one transaction descriptor header.
func allHeaders() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 22)
	b = binary.LittleEndian.AppendUint32(b, 18)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint64(b, 0)
	return binary.LittleEndian.AppendUint32(b, 1)
}

// rpcExecuteSQL builds an sp_executesql call by procedure id.
func rpcExecuteSQL(text string) []byte {
	b := allHeaders()
	b = binary.LittleEndian.AppendUint16(b, 0xFFFF)
	b = binary.LittleEndian.AppendUint16(b, spExecuteSQL)
	b = binary.LittleEndian.AppendUint16(b, 0) // option flags
	b = append(b, 0, 0)                        // unnamed, no status flags
	sql := encodeUCS2(text)
	b = append(b, typeNVarChar)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(sql)))
	b = append(b, collationLatin1[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(sql)))
	return append(b, sql...)
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name    string
		typ     byte
		payload []byte
		want    request
	}{
		{"batch", packetSQLBatch, append(allHeaders(), encodeUCS2("SELECT 1")...), request{kind: requestBatch, text: "SELECT 1"}},
		{"sp_executesql", packetRPC, rpcExecuteSQL("SELECT @p1"), request{kind: requestRPC, text: "SELECT @p1"}},
		{"begin", packetTransaction, append(allHeaders(), 5, 0, 0, 0), request{kind: requestTransaction, tm: tmBegin, text: beginTransactionText}},
	}
	for _, tt := range tests {
		got, err := decodeRequest(tt.typ, tt.payload)
		assert.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
	for _, bad := range [][]byte{nil, {1, 2}, {3, 0, 0, 0}, {0xFF, 0xFF, 0xFF, 0x7F}} {
		_, err := decodeRequest(packetRPC, bad)
		assert.Error(t, err, "decodeRequest(%x) accepted a malformed payload", bad)
	}
}

// FuzzDecodeRequest feeds arbitrary bytes to every decoder that reads
// network input: packet framing, PRELOGIN, LOGIN7 and requests. None may
// panic; malformed input must come back as an error.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(packetSQLBatch, append(allHeaders(), encodeUCS2("SELECT 1")...))
	f.Add(packetRPC, rpcExecuteSQL("SELECT a FROM t WHERE id = @p1"))
	f.Add(packetTransaction, append(allHeaders(), 7, 0, 0, 0))
	f.Add(packetPrelogin, preloginResponse())
	f.Add(packetLogin7, make([]byte, login7FixedLength))
	f.Add(packetAttention, []byte{})
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		_, _ = decodeRequest(typ, payload)
		_, _ = parsePrelogin(payload)
		_, _ = parseLogin7(payload)
		framed := framePackets(typ, 51, minPacketSize, payload)
		m, err := readMessage(bytes.NewReader(framed))
		if clientPacketType(typ) {
			require.NoError(t, err, "framing round trip of type %#x, %d bytes", typ, len(payload))
			require.Equal(t, typ, m.typ, "framing round trip: type")
			require.True(t, bytes.Equal(m.payload, payload), "framing round trip of type %#x: %d bytes, want %d", typ, len(m.payload), len(payload))
		}
		_, _ = readMessage(bytes.NewReader(payload))
	})
}

// FuzzCommandOf feeds arbitrary statement text to the verb scanner, which
// reads every statement a client sends. It must end, never panic, and
// give a command that the verb table or the SELECT INTO case knows.
func FuzzCommandOf(f *testing.F) {
	for _, s := range []string{
		"UPDATE t SET n = n + 1", "((select 1))", "WITH c AS (SELECT 1) DELETE t",
		"SELECT a INTO b FROM c", "/* /* */ x", "'it''s'", "[a]]b] update", "-- x",
		"CREATE OR ALTER PROC p AS SELECT 1", ")))select",
	} {
		f.Add(s)
	}
	known := map[uint16]bool{cmdNone: true, cmdSelectInto: true}
	for _, cmd := range statementCommands {
		known[cmd] = true
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd := commandOf(text)
		require.True(t, known[cmd], "commandOf(%q) = %#x, not a known command", text, cmd)
	})
}
