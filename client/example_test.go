package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/keyward/keyward/client"
)

// Sign in with a licence key and keep the session alive until the server
// kills it or the program ends.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New("https://licenses.example.com", os.Getenv("APP_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.Login(ctx, "ABCDE-FGHIJ-KLMNO", "machine-id")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		log.Fatalf("licence refused: %s (%s)", apiErr.Message, apiErr.Code)
	} else if err != nil {
		log.Fatal(err)
	}
	defer s.Logout(context.Background())
	fmt.Println("signed in, expires", s.User.ExpiresAt)
	err = s.Run(ctx, client.HeartbeatOptions{
		OnKill: func(code string) { fmt.Println("licence ended:", code) },
	})
	if client.IsKill(err) {
		os.Exit(3)
	}
}

// Pin the signing key of your keyward server: replies that are not signed
// with it are refused before they are parsed.
func ExampleWithPinnedKeys() {
	pem, err := os.ReadFile("keyward-signing.pub.pem")
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New("https://licenses.example.com", os.Getenv("APP_SECRET"), client.WithPinnedKeys(pem))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.CheckKey(context.Background(), "ABCDE-FGHIJ-KLMNO")
	if errors.Is(err, client.ErrBadSignature) || errors.Is(err, client.ErrUnsigned) {
		log.Fatal("not our licence server: ", err)
	}
}

// Check for an update and download it, resuming an interrupted download
// and verifying its sha256.
func ExampleClient_DownloadFile() {
	ctx := context.Background()
	c, err := client.New("https://licenses.example.com", os.Getenv("APP_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	offer, err := c.CheckUpdate(ctx, client.UpdateRequest{Version: "1.4.0", Channel: "stable", OS: "windows", Arch: "x64"})
	if err != nil {
		log.Fatal(err)
	}
	if offer == nil {
		fmt.Println("up to date")
		return
	}
	if err := c.DownloadFile(ctx, offer, "setup-"+offer.Version+".exe"); errors.Is(err, client.ErrChecksum) {
		log.Fatal("corrupted download, deleted: ", err)
	} else if err != nil {
		log.Fatal("download interrupted, run again to resume: ", err)
	}
}

// IsKill tells the errors that end a session from transient ones.
func ExampleIsKill() {
	banned := &client.APIError{Status: 200, Code: "BANNED", Message: "This license has been banned.", Sealed: true}
	limited := &client.APIError{Status: 200, Code: "RATE_LIMITED", Sealed: true}
	lost := &client.KillError{Code: client.CodeNetworkLost}
	fmt.Println(client.IsKill(banned), client.KillCode(banned))
	fmt.Println(client.IsKill(limited))
	fmt.Println(client.IsKill(fmt.Errorf("heartbeat: %w", lost)), client.KillCode(lost))
	// Output:
	// true BANNED
	// false
	// true NETWORK_LOST
}

// ReplyCanonical builds the bytes a PWF-REPLY-V1 signature covers.
func ExampleReplyCanonical() {
	c := client.ReplyCanonical("aaaa", "POST", "/api/auth/login.php", []byte(`{"test":"request"}`), 200, []byte(`{"success":true,"session_id":"fixture"}`))
	fmt.Println(string(c))
	// Output:
	// PWF-REPLY-V1
	// aaaa
	// POST
	// /api/auth/login.php
	// dfcb202183420b1498ccddb37382fdf8727501377e7039569eb5fcf9c4df67da
	// 200
	// 838963bcdf02b67117c36eeb954325549ed7439686f2964a5171061b91ce698c
}

// Ride out an outage of the licence server: pin its reply key, keep the
// signed trust in a file, and let Verdict say whether to run. The app's
// offline trust (offline_enabled) must be on for the server to promise any.
func ExampleClient_Verdict() {
	ctx := context.Background()
	pem, err := os.ReadFile("keyward-reply-key.pem")
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New("https://licenses.example.com", os.Getenv("APP_SECRET"),
		client.WithPinnedKeys(pem), client.WithStore(client.FileStore("licence-trust.json")))
	if err != nil {
		log.Fatal(err)
	}
	const key = "ABCDE-FGHIJ-KLMNO"
	s, err := c.Login(ctx, key, "machine-id")
	switch v := c.Verdict(key, err); v.Status {
	case client.Allowed:
		err = s.Run(ctx, client.HeartbeatOptions{OnEvent: func(e client.Event) {
			if e.Kind == client.EventGrace {
				fmt.Println("licence server unreachable; running until", e.GraceUntil)
			}
		}})
		fmt.Println("session ended:", client.KillCode(err))
	case client.Grace:
		fmt.Println("licence server unreachable; running until", v.Until, "- sign in again later")
	case client.Refused:
		fmt.Println("licence refused:", v.Code, v.Err)
	}
}
