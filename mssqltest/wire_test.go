package mssqltest

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeExchange is one request answered over an in-memory connection: the
// test reads what the server writes from client and sends later messages
// (an ATTENTION) on messages.
type pipeExchange struct {
	x        *exchange
	client   net.Conn
	messages chan message
}

func newPipeExchange(t *testing.T, kind requestKind, text string) pipeExchange {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() {
		server.Close()
		client.Close()
	})
	messages := make(chan message, 1)
	c := &conn{
		srv:        &Server{closing: make(chan struct{})},
		nc:         server,
		spid:       51,
		packetSize: defaultPacketSize,
		messages:   messages,
	}
	req := request{kind: kind, text: text}
	return pipeExchange{x: &exchange{c: c, req: req, cmd: requestCommand(req)}, client: client, messages: messages}
}

// answer runs r in the background and returns where its error arrives.
func (p pipeExchange) answer(r Reply) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.answer(p.x) }()
	return done
}

// read returns the next n bytes the server wrote.
func (p pipeExchange) read(t *testing.T, n int) []byte {
	t.Helper()
	require.NoError(t, p.client.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, n)
	_, err := io.ReadFull(p.client, b)
	require.NoError(t, err)
	return b
}

// replyMessage is one single-packet server message as SQL Server frames
// it for session 51.
func replyMessage(tokens ...byte) []byte {
	header := []byte{packetReply, statusEOM, 0, 0, 0x00, 0x33, 1, 0}
	binary.BigEndian.PutUint16(header[2:], uint16(packetHeaderLength+len(tokens)))
	return append(header, tokens...)
}

// doneBytes is a DONE, DONEPROC or DONEINPROC token.
func doneBytes(token byte, status, curCmd uint16, count uint64) []byte {
	b := []byte{token}
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, curCmd)
	return binary.LittleEndian.AppendUint64(b, count)
}

func TestAttentionSequenceBytes(t *testing.T) {
	tests := []struct {
		name        string
		kind        requestKind
		text        string
		reply       Reply
		interrupted []byte
	}{
		{"batch hang", requestBatch, "UPDATE t SET n = n + 1", Hang(),
			[]byte{0xFD, 0x02, 0x00, 0xC5, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"batch delay", requestBatch, "SELECT n FROM t", Delay(time.Hour, Rows([]string{"n"}, []any{1})),
			[]byte{0xFD, 0x02, 0x00, 0xC1, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"rpc hang", requestRPC, "DELETE FROM t WHERE id = @p1", Hang(),
			[]byte{0xFE, 0x02, 0x00, 0xC4, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"unknown verb", requestBatch, "WAITFOR DELAY '01:00:00'", Hang(),
			[]byte{0xFD, 0x02, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	ack := replyMessage(0xFD, 0x20, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeExchange(t, tt.kind, tt.text)
			done := p.answer(tt.reply)
			p.messages <- message{typ: packetAttention, status: statusEOM}

			// The interrupted response ends in a message of its own, then
			// the acknowledgement follows in a second one.
			first := replyMessage(tt.interrupted...)
			assert.Equal(t, first, p.read(t, len(first)), "interrupted response")
			assert.Equal(t, ack, p.read(t, len(ack)), "attention acknowledgement")
			require.NoError(t, <-done)
		})
	}
}

func TestAttentionAfterReplyIsOnlyAcknowledged(t *testing.T) {
	srv := &Server{closing: make(chan struct{})}
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	c := &conn{srv: srv, nc: server, spid: 51, packetSize: defaultPacketSize}
	done := make(chan error, 1)
	go func() { done <- c.dispatch(message{typ: packetAttention, status: statusEOM}) }()
	ack := replyMessage(0xFD, 0x20, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0)
	require.NoError(t, client.SetReadDeadline(time.Now().Add(5*time.Second)))
	got := make([]byte, len(ack))
	_, err := io.ReadFull(client, got)
	require.NoError(t, err)
	assert.Equal(t, ack, got)
	require.NoError(t, <-done)
}

func TestDoneCurCmdPerVerb(t *testing.T) {
	tests := []struct {
		text string
		cmd  uint16
	}{
		{"SELECT n FROM t", 0xC1},
		{"SELECT n INTO t2 FROM t", 0xC2},
		{"INSERT INTO t (n) VALUES (@p1)", 0xC3},
		{"DELETE FROM t", 0xC4},
		{"UPDATE t SET n = n + 1", 0xC5},
		{"MERGE t USING s ON t.id = s.id WHEN MATCHED THEN DELETE;", 0x117},
		{"EXEC proc", 0xE0},
		{"CREATE TABLE t (n int)", 0xC6},
		{"DROP TABLE t", 0xC7},
		{"WAITFOR DELAY '00:00:01'", 0x00},
	}
	for _, tt := range tests {
		for _, kind := range []requestKind{requestBatch, requestRPC} {
			p := newPipeExchange(t, kind, tt.text)
			done := p.answer(Affected(1))
			var want []byte
			token := tokenDone
			if kind == requestRPC {
				want = append(want, tokenReturnStatus, 0, 0, 0, 0)
				token = tokenDoneProc
			}
			want = replyMessage(append(want, doneBytes(token, doneCount, tt.cmd, 1)...)...)
			assert.Equal(t, want, p.read(t, len(want)), "%q over %v", tt.text, kind)
			require.NoError(t, <-done)
		}
	}
}

func TestDoneCurCmdOfOtherReplies(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		p := newPipeExchange(t, requestBatch, "UPDATE t SET n = n + 1")
		done := p.answer(Error(1205))
		var e tokenWriter
		e.error(errorFor(1205, p.x.c.session))
		want := replyMessage(append(e.buf, doneBytes(tokenDone, doneError, cmdUpdate, 0)...)...)
		assert.Equal(t, want, p.read(t, len(want)))
		require.NoError(t, <-done)
	})
	t.Run("unscripted", func(t *testing.T) {
		p := newPipeExchange(t, requestBatch, "DELETE FROM t")
		done := p.answer(defaultReply(p.x.req))
		want := replyMessage(doneBytes(tokenDone, doneFinal, cmdDelete, 0)...)
		assert.Equal(t, want, p.read(t, len(want)))
		require.NoError(t, <-done)
	})
	// A result set keeps the command of a statement that changes data
	// (its OUTPUT clause) and is a SELECT's otherwise.
	for _, tt := range []struct {
		text string
		cmd  uint16
	}{
		{"UPDATE t SET n = n + 1 OUTPUT inserted.n", cmdUpdate},
		{"EXEC list_things", cmdSelect},
		{"SELECT n FROM t", cmdSelect},
	} {
		t.Run(tt.text, func(t *testing.T) {
			reply := Rows([]string{"n"}, []any{1})
			p := newPipeExchange(t, requestBatch, tt.text)
			done := p.answer(reply)
			var body tokenWriter
			rs := reply.(rowsReply).rs
			body.colMetadata(rs)
			body.nbcRow(rs, rs.rows[0])
			want := replyMessage(append(body.buf, doneBytes(tokenDone, doneCount, tt.cmd, 1)...)...)
			assert.Equal(t, want, p.read(t, len(want)))
			require.NoError(t, <-done)
		})
	}
}

func TestCommandOf(t *testing.T) {
	tests := []struct {
		text string
		want uint16
	}{
		{"select 1", cmdSelect},
		{"  \n\tSELECT 1", cmdSelect},
		{"-- note\nUPDATE t SET n = 1", cmdUpdate},
		{"/* a /* nested */ comment */ delete t", cmdDelete},
		{"((SELECT 1) UNION (SELECT 2))", cmdSelect},
		{"insert t values (1)", cmdInsert},
		{"INSERT INTO t SELECT * FROM s", cmdInsert},
		{"SELECT a, b INTO #tmp FROM t", cmdSelectInto},
		{"SELECT a FROM t WHERE b IN (SELECT c INTO x FROM y)", cmdSelect},
		{"SELECT 'into' FROM t", cmdSelect},
		{"SELECT [into] FROM t", cmdSelect},
		{"WITH c AS (SELECT 1 AS n) UPDATE t SET n = c.n FROM c", cmdUpdate},
		{"WITH c (n) AS (SELECT 1), d AS (SELECT 2) SELECT * FROM c, d", cmdSelect},
		{"WITH c AS (SELECT 1 AS n) DELETE FROM t", cmdDelete},
		{"MERGE INTO t USING s ON 1 = 1 WHEN NOT MATCHED THEN INSERT VALUES (1);", cmdMerge},
		{"EXECUTE sp_who", cmdExecute},
		{"exec dbo.p @a = 1", cmdExecute},
		{"CREATE TABLE t (n int)", 0xC6},
		{"CREATE UNIQUE NONCLUSTERED INDEX i ON t (n)", 0xC8},
		{"CREATE OR ALTER PROCEDURE p AS SELECT 1", 0xDE},
		{"ALTER TABLE t ADD m int", 0xD8},
		{"DROP VIEW v", 0xD0},
		{"GRANT SELECT ON t TO u", 0xCD},
		{"SET NOCOUNT ON; UPDATE t SET n = 1", cmdNone},
		{"BEGIN TRANSACTION", cmdNone},
		{"TRUNCATE TABLE t", cmdNone},
		{"CREATE SEQUENCE s", cmdNone},
		{"", cmdNone},
		{"'unterminated", cmdNone},
		{"/* unterminated", cmdNone},
		{"sp_executesql", cmdNone},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, commandOf(tt.text), "commandOf(%q)", tt.text)
	}
}
