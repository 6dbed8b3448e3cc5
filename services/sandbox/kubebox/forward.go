package kubebox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// Dial connects to the daemon of the pod named pod through the API
// server's port-forward: one upgraded connection per call, closed with the
// returned conn. The daemon listens on the pod's loopback, which only this
// path reaches.
func (c *Client) Dial(ctx context.Context, pod string) (net.Conn, error) {
	u := c.cs.core.Post().Resource("pods").Namespace(c.cfg.Namespace).Name(pod).SubResource("portforward").URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	conn, proto, err := spdy.Negotiate(c.spdy.upgrader, &http.Client{Transport: c.spdy.rt}, req, portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	if proto != portforward.PortForwardProtocolV1Name {
		conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s: the API server speaks %q", pod, proto)
	}
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(DaemonPort))
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	errStream.Close() // nothing is written to it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	fc := &forwardConn{conn: conn, data: data, pod: pod}
	go func() {
		// The kubelet reports a failed forward (nothing listening) here;
		// the data stream then never answers, so the connection goes.
		if msg, _ := io.ReadAll(errStream); len(msg) > 0 {
			fc.fail(fmt.Errorf("port-forward to pod %s: %s", pod, msg))
		}
	}()
	return fc, nil
}

// forwardConn is a net.Conn over one port-forward data stream.
type forwardConn struct {
	conn httpstream.Connection
	data httpstream.Stream
	pod  string

	mu  sync.Mutex
	err error
}

func (f *forwardConn) fail(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.conn.Close()
}

func (f *forwardConn) failure(err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	return err
}

func (f *forwardConn) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if err != nil && err != io.EOF {
		err = f.failure(err)
	}
	return n, err
}

func (f *forwardConn) Write(p []byte) (int, error) {
	n, err := f.data.Write(p)
	if err != nil {
		err = f.failure(err)
	}
	return n, err
}

func (f *forwardConn) Close() error {
	_ = f.data.Reset()
	return f.conn.Close()
}

func (f *forwardConn) LocalAddr() net.Addr { return forwardAddr("wick-sandbox") }
func (f *forwardConn) RemoteAddr() net.Addr {
	return forwardAddr(f.pod + ":" + strconv.Itoa(DaemonPort))
}

// Deadlines are not carried by the stream; gRPC's keepalive and the
// calls' own deadlines bound every wait instead.
func (f *forwardConn) SetDeadline(time.Time) error      { return nil }
func (f *forwardConn) SetReadDeadline(time.Time) error  { return nil }
func (f *forwardConn) SetWriteDeadline(time.Time) error { return nil }

type forwardAddr string

func (a forwardAddr) Network() string { return "portforward" }
func (a forwardAddr) String() string  { return string(a) }
