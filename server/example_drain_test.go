package server_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
)

// A replica behind a load balancer: /readyz and /livez beside /mcp, and on
// SIGTERM readiness turns 503, the replica serves on for 5 s while the load
// balancer notices, then shuts down, letting running calls finish within
// 20 s. With a shared session store the sessions live on for the other
// replicas.
func ExampleServer_Drain() {
	mcpServer := mcpserver.NewMCPServer("example", "1.0.0", mcpserver.WithToolCapabilities(true))
	srv := server.NewStreamableHTTPServer(mcpServer, server.WithHealthPaths("/readyz", "/livez"))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Start(":8080") }()
	select {
	case err := <-served:
		log.Fatal(err)
	case <-ctx.Done():
	}
	_ = srv.Drain(context.Background(), 5*time.Second)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Print(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}
