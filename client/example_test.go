package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/matchgate/matchgate/client"
)

// exampleBase is a running server (started by TestMain) with a pairs queue.

func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := client.Guest(ctx, exampleBase, 1500)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(ctx, exampleBase, client.StaticToken(g.Token), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("hello for me:", c.Hello().UserID == g.UserID)

	t, err := c.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("joined:", t.Status)
	t, err = c.Cancel(ctx, t.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled:", t.Status)
	// Output:
	// hello for me: true
	// joined: WAITING
	// cancelled: CANCELLED
}

func ExampleClient_Events() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var players []*client.Client
	for range 2 {
		g, err := client.Guest(ctx, exampleBase, 1500)
		if err != nil {
			log.Fatal(err)
		}
		c, err := client.Dial(ctx, exampleBase, client.StaticToken(g.Token), nil)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Join(ctx, "pairs", client.JoinOptions{}); err != nil {
			log.Fatal(err)
		}
		players = append(players, c)
	}
	// Each player is pushed the match; the state it holds follows.
	for _, c := range players {
		for e := range c.Events() {
			if m, ok := e.(client.MatchEvent); ok {
				fmt.Println(m.Frame, m.Match.State, len(m.Match.Players), "players")
				t := c.Tickets()[0]
				fmt.Println("my ticket:", t.Status, t.MatchID == m.Match.ID)
				break
			}
		}
	}
	// Output:
	// match.found READY 2 players
	// my ticket: MATCHED true
	// match.found READY 2 players
	// my ticket: MATCHED true
}

func ExampleBackoff() {
	half := func() float64 { return 0.5 }
	for attempt := range 7 {
		fmt.Println(attempt, client.Backoff(attempt, 500*time.Millisecond, 15*time.Second, half))
	}
	// Output:
	// 0 250ms
	// 1 500ms
	// 2 1s
	// 3 2s
	// 4 4s
	// 5 7.5s
	// 6 7.5s
}
