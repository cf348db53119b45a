// Command example calls Switchyard over gRPC with the Go client: a chat, a
// stream, and the circuit breakers.
//
//	go run ./examples/go -addr localhost:9090 -model simulator/sim-1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	switchyard "github.com/switchyard/switchyard/clients/go"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

func main() {
	addr := flag.String("addr", "localhost:9090", "Switchyard's gRPC address")
	model := flag.String("model", "simulator/sim-1", "model to call")
	flag.Parse()
	if err := run(*addr, *model); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(addr, model string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := switchyard.Dial(ctx, addr, switchyard.WithInsecure(),
		switchyard.WithKey(os.Getenv("SWITCHYARD_MASTER_KEY")), switchyard.WithAdminKey(os.Getenv("SWITCHYARD_ADMIN_KEY")))
	if err != nil {
		return err
	}
	defer c.Close()
	req := &pb.ChatCompletionRequest{Model: model, Messages: []*pb.ChatMessage{switchyard.User("Say hello.")}}

	resp, err := c.Chat(ctx, req)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	fmt.Println("chat:", switchyard.Text(resp))

	fmt.Print("stream: ")
	for chunk, err := range c.Stream(ctx, req) {
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		for _, ch := range chunk.GetChoices() {
			fmt.Print(ch.GetDelta().GetContent())
		}
	}
	fmt.Println()

	breakers, err := c.Admin.Breakers(ctx)
	if err != nil {
		return fmt.Errorf("breakers: %w", err)
	}
	for _, b := range breakers {
		fmt.Printf("breaker: %s %s %s\n", b.GetProvider(), b.GetModel(), b.GetState())
	}
	return nil
}
