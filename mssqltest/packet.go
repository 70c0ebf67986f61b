package mssqltest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// TDS packet types (MS-TDS 2.2.3.1.1) this server reads or writes.
const (
	packetSQLBatch    byte = 0x01
	packetRPC         byte = 0x03
	packetReply       byte = 0x04
	packetAttention   byte = 0x06
	packetTransaction byte = 0x0E
	packetLogin7      byte = 0x10
	packetPrelogin    byte = 0x12
)

// Packet header status bits (MS-TDS 2.2.3.1.2).
const (
	statusEOM          byte = 0x01
	statusResetConn    byte = 0x08
	statusResetConnTx  byte = 0x10
	packetHeaderLength      = 8
)

const (
	// defaultPacketSize is what SQL Server uses until LOGIN7 asks for another.
	defaultPacketSize = 4096
	minPacketSize     = 512
	maxPacketSize     = 32767
	// maxMessageSize bounds the memory one request may take, so a client
	// that never sets the end-of-message bit cannot exhaust the test process.
	maxMessageSize = 16 << 20
)

// errMalformed marks input that does not follow MS-TDS; the connection that
// sent it is closed.
var errMalformed = errors.New("mssqltest: malformed TDS message")

// message is one client request: the payload of all its packets joined.
type message struct {
	typ     byte
	status  byte // status of the first packet (carries the reset bits)
	payload []byte
}

// readMessage reads packets until one carries the end-of-message bit.
func readMessage(r io.Reader) (message, error) {
	var (
		m      message
		header [packetHeaderLength]byte
		first  = true
	)
	for {
		if _, err := io.ReadFull(r, header[:]); err != nil {
			if !first && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return message{}, err
		}
		if !clientPacketType(header[0]) {
			return message{}, fmt.Errorf("%w: %#x is not a client packet type", errMalformed, header[0])
		}
		size := int(binary.BigEndian.Uint16(header[2:4]))
		if size < packetHeaderLength || size > maxPacketSize+1 {
			return message{}, fmt.Errorf("%w: packet length %d is outside %d..%d", errMalformed, size, packetHeaderLength, maxPacketSize+1)
		}
		if first {
			m.typ, m.status = header[0], header[1]
			first = false
		} else if header[0] != m.typ {
			return message{}, fmt.Errorf("%w: packet type %#x inside a message of type %#x", errMalformed, header[0], m.typ)
		}
		if len(m.payload)+size-packetHeaderLength > maxMessageSize {
			return message{}, fmt.Errorf("%w: message longer than %d bytes", errMalformed, maxMessageSize)
		}
		start := len(m.payload)
		m.payload = append(m.payload, make([]byte, size-packetHeaderLength)...)
		if _, err := io.ReadFull(r, m.payload[start:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return message{}, err
		}
		if header[1]&statusEOM != 0 {
			return m, nil
		}
	}
}

// clientPacketType reports whether a client may send packets of type typ,
// so that a stranger on the port (an HTTP probe, TLS without PRELOGIN) is
// turned away at its first byte instead of after a length it invented.
func clientPacketType(typ byte) bool {
	switch typ {
	case packetSQLBatch, packetRPC, packetAttention, packetTransaction, packetLogin7, packetPrelogin,
		0x07, 0x08, 0x11: // bulk load, federated authentication token, SSPI
		return true
	}
	return false
}

// framePackets splits a server message into TDS packets of at most
// packetSize bytes, header included, ready for one Write.
func framePackets(typ byte, spid uint16, packetSize int, payload []byte) []byte {
	body := packetSize - packetHeaderLength
	count := (len(payload) + body - 1) / body
	if count == 0 {
		count = 1
	}
	out := make([]byte, 0, len(payload)+count*packetHeaderLength)
	for i := 0; i < count; i++ {
		chunk := payload[min(i*body, len(payload)):min((i+1)*body, len(payload))]
		status := byte(0)
		if i == count-1 {
			status = statusEOM
		}
		out = append(out, typ, status, 0, 0, 0, 0, byte(i+1), 0)
		binary.BigEndian.PutUint16(out[len(out)-6:], uint16(len(chunk)+packetHeaderLength))
		binary.BigEndian.PutUint16(out[len(out)-4:], spid)
		out = append(out, chunk...)
	}
	return out
}
