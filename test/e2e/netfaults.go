package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// connectProxy is an HTTP CONNECT proxy that a runtime process reaches kcp
// through (its kubeconfig's proxy-url, runtimetest.ProxyController), so
// that a test can cut the process off from one shard while it still
// reaches the others and the front-proxy: Cut refuses new tunnels to a port
// and resets those open, as a network that lost the route would; Heal lets
// them through again. Every kcp process of the test environment listens on
// a port of its own, so a port names a shard.
type connectProxy struct {
	URL string
	ln  net.Listener

	mu sync.Mutex
	// cut are the ports no tunnel may reach.
	cut map[string]bool
	// open are the tunnels' connections (both ends), by target port.
	open map[string]map[net.Conn]bool
	// opened and refused count the tunnels asked for, by target port.
	opened, refused map[string]int
	// stalled holds, for each stalled port, a channel closed when the
	// stall ends.
	stalled map[string]chan struct{}
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check.Must(t, err)
	p := &connectProxy{URL: "http://" + ln.Addr().String(), ln: ln, cut: map[string]bool{},
		open: map[string]map[net.Conn]bool{}, opened: map[string]int{}, refused: map[string]int{}, stalled: map[string]chan struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for port, ch := range p.stalled {
			close(ch)
			delete(p.stalled, port)
		}
		for _, conns := range p.open {
			for c := range conns {
				_ = c.Close()
			}
		}
	})
	return p
}

func (p *connectProxy) serve(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		_ = c.Close()
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		_ = c.Close()
		return
	}
	_, port, err := net.SplitHostPort(req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut[port] {
		p.refused[port]++
		p.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
		_ = c.Close()
		return
	}
	p.opened[port]++
	p.mu.Unlock()
	upstream, err := net.DialTimeout("tcp", req.Host, 10*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		_ = c.Close()
		return
	}
	if !p.track(port, c, upstream) {
		// Cut while dialling.
		_ = c.Close()
		_ = upstream.Close()
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.untrack(port, c, upstream)
		return
	}
	// While port is stalled, what arrives is held.
	splice(c, br, upstream, func(dst io.Writer, src io.Reader) { p.pump(port, dst, src) })
	p.untrack(port, c, upstream)
}

// pump copies src to dst, holding each chunk while port is stalled.
func (p *connectProxy) pump(port string, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate(port)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// flowing is closed: a port not stalled lets everything through.
var flowing = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// gate is closed while port is not stalled.
func (p *connectProxy) gate(port string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch, ok := p.stalled[port]; ok {
		return ch
	}
	return flowing
}

// Stall holds everything sent either way through the tunnels to port, open
// and new, without closing any: a network that silently drops packets, as
// a client notices only when a timeout of its own ends.
func (p *connectProxy) Stall(port string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.stalled[port]; !ok {
		p.stalled[port] = make(chan struct{})
	}
}

// Unstall lets what Stall held through.
func (p *connectProxy) Unstall(port string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch, ok := p.stalled[port]; ok {
		close(ch)
		delete(p.stalled, port)
	}
}

// splice copies both ways with pump until either side ends, then closes
// both.
func splice(client net.Conn, fromClient io.Reader, upstream net.Conn, pump func(dst io.Writer, src io.Reader)) {
	done := make(chan struct{}, 2)
	go func() { pump(upstream, fromClient); done <- struct{}{} }()
	go func() { pump(client, upstream); done <- struct{}{} }()
	<-done
	_ = client.Close()
	_ = upstream.Close()
	<-done
}

func (p *connectProxy) track(port string, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut[port] {
		return false
	}
	if p.open[port] == nil {
		p.open[port] = map[net.Conn]bool{}
	}
	for _, c := range conns {
		p.open[port][c] = true
	}
	return true
}

func (p *connectProxy) untrack(port string, conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.open[port], c)
	}
}

// Cut refuses every new tunnel to port and resets those open.
func (p *connectProxy) Cut(port string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut[port] = true
	for c := range p.open[port] {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not an orderly close
		}
		_ = c.Close()
	}
	delete(p.open, port)
}

// Heal lets tunnels to port through again.
func (p *connectProxy) Heal(port string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cut, port)
}

// Counts returns how many tunnels to port were opened and refused so far.
func (p *connectProxy) Counts(port string) (opened, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened[port], p.refused[port]
}

// waitReached waits until who has opened a tunnel to port, shard's.
func (p *connectProxy) waitReached(ctx context.Context, t *testing.T, who, shard, port string) {
	t.Helper()
	check.Eventually(ctx, t, time.Minute, who+" to reach shard "+shard+" through the proxy", func() error {
		if opened, _ := p.Counts(port); opened == 0 {
			return fmt.Errorf("%s", p.describe(port))
		}
		return nil
	})
}

// portOf is the port of a URL such as a shard's.
func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	check.Must(t, err)
	if u.Port() == "" {
		t.Fatalf("%s names no port", rawURL)
	}
	return u.Port()
}

// balancer forwards the TCP connections made to its address to backends
// (host:port), a new connection to the next backend in rotation, as a
// Service does for the ready pods behind it. TLS passes through: kcp talks
// to the webhook replicas themselves.
type balancer struct {
	ln net.Listener

	mu       sync.Mutex
	rotation []string
	next     int
	// open are the connections (both ends) to each backend.
	open map[string]map[net.Conn]bool
	// served counts the connections forwarded to each backend.
	served map[string]int
}

// startBalancer listens at addr and forwards to backends, all in rotation.
func startBalancer(t *testing.T, addr string, backends ...string) *balancer {
	t.Helper()
	var ln net.Listener
	// addr was just freed by the process that served it.
	check.Eventually(t.Context(), t, 30*time.Second, "listening at "+addr, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	b := &balancer{ln: ln, rotation: slices.Clone(backends), open: map[string]map[net.Conn]bool{}, served: map[string]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, conns := range b.open {
			for c := range conns {
				_ = c.Close()
			}
		}
	})
	return b
}

func (b *balancer) serve(c net.Conn) {
	b.mu.Lock()
	if len(b.rotation) == 0 {
		b.mu.Unlock()
		_ = c.Close()
		return
	}
	backend := b.rotation[b.next%len(b.rotation)]
	b.next++
	b.served[backend]++
	b.mu.Unlock()
	upstream, err := net.DialTimeout("tcp", backend, 10*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	b.mu.Lock()
	if !slices.Contains(b.rotation, backend) {
		// Taken out of rotation while dialling.
		b.mu.Unlock()
		_ = c.Close()
		_ = upstream.Close()
		return
	}
	if b.open[backend] == nil {
		b.open[backend] = map[net.Conn]bool{}
	}
	b.open[backend][c], b.open[backend][upstream] = true, true
	b.mu.Unlock()
	splice(c, c, upstream, func(dst io.Writer, src io.Reader) { _, _ = io.Copy(dst, src) })
	b.mu.Lock()
	delete(b.open[backend], c)
	delete(b.open[backend], upstream)
	b.mu.Unlock()
}

// Rotate puts exactly backends in rotation, and resets the connections to
// every other backend, so that the clients connect again, to those.
func (b *balancer) Rotate(backends ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rotation = slices.Clone(backends)
	for backend, conns := range b.open {
		if slices.Contains(backends, backend) {
			continue
		}
		for c := range conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
		delete(b.open, backend)
	}
}

// Served is how many connections were forwarded to backend so far.
func (b *balancer) Served(backend string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.served[backend]
}

// describe names the counts, for logs.
func (p *connectProxy) describe(port string) string {
	opened, refused := p.Counts(port)
	return fmt.Sprintf("%d tunnels to port %s opened, %d refused", opened, port, refused)
}
