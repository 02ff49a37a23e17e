package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// redisReadyTimeout bounds how long StartRedisServer and Restart wait for a
// started redis-server to answer PING.
const redisReadyTimeout = 10 * time.Second

// RedisServer is a redis-server process run for one test: loopback only,
// persistence off (a restart loses every key, as a real restart without
// persistence does), working directory and log in the test's temporary
// directory. Stop and Restart let fault tests take it away and bring it
// back on the same address, Pause and Resume make it hang. It is safe for concurrent use.
type RedisServer struct {
	addr string
	port int
	dir  string
	bin  string

	mu   sync.Mutex
	cmd  *exec.Cmd     // nil while stopped
	done chan struct{} // closed when cmd has exited
}

// StartRedis starts a redis-server for t and returns its address
// (127.0.0.1:port). It is stopped when the test ends. If redis-server is
// not on PATH the test is skipped with a message naming the binary.
func StartRedis(t testing.TB) (addr string) {
	t.Helper()
	return StartRedisServer(t).Addr()
}

// StartRedisServer is StartRedis returning the server's handle, for tests
// that stop and restart it.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (Debian package redis-server): %v", err)
	}
	r, err := LaunchRedisServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// LaunchRedisServer is StartRedisServer for a program without a
// testing.TB (a soak run): it starts a redis-server working in dir (which
// must exist) and returns once it answers PING. The caller must Stop it.
// The error wraps exec.ErrNotFound when redis-server is not on PATH.
func LaunchRedisServer(dir string) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not on PATH (Debian package redis-server): %w", err)
	}
	r := &RedisServer{dir: dir, bin: bin}
	// A free port can be taken by someone else between finding and binding
	// it; try a few.
	for range 5 {
		if r.port, err = freePort(); err != nil {
			break
		}
		r.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
		if err = r.start(); err == nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("start redis-server: %w", err)
}

// Addr returns the server's address, the same across restarts.
func (r *RedisServer) Addr() string { return r.addr }

// Stop kills the server (SIGKILL, like a crash; a paused one too) and waits
// for the process to exit. Stopping a stopped server does nothing.
func (r *RedisServer) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

// Restart stops the server if it runs and starts it again on the same
// address and directory, returning once it answers PING. It starts empty.
func (r *RedisServer) Restart() error {
	r.mu.Lock()
	r.stopLocked()
	r.mu.Unlock()
	return r.start()
}

// Pause stops the server's process (SIGSTOP) without closing anything:
// connections stay open and new ones are accepted by the kernel, but
// nothing is answered, like a hung or overloaded server. Resume undoes it.
func (r *RedisServer) Pause() error { return r.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (r *RedisServer) Resume() error { return r.signal(syscall.SIGCONT) }

func (r *RedisServer) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return errors.New("redis-server is stopped")
	}
	return r.cmd.Process.Signal(sig)
}

func (r *RedisServer) stopLocked() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd, r.done = nil, nil
}

// start runs redis-server and waits until it answers PING, or fails if it
// exits first (the port was taken) or does not answer in time.
func (r *RedisServer) start() error {
	logPath := filepath.Join(r.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open redis log: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(r.bin,
		"--save", "", "--appendonly", "no",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--dir", r.dir)
	cmd.Dir = r.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", r.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()

	deadline := time.Now().Add(redisReadyTimeout)
	for {
		err := redisPing(r.addr)
		if err == nil {
			return nil
		}
		select {
		case <-done:
			r.Stop()
			return fmt.Errorf("redis-server on %s exited before answering: %s", r.addr, logTail(logPath))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return fmt.Errorf("redis-server on %s did not answer PING within %v: %w", r.addr, redisReadyTimeout, err)
		}
	}
}

// redisPing sends PING over a raw connection and expects +PONG.
func redisPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return errors.New("PING answered " + line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}
