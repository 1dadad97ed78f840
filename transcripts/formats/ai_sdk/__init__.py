"""The Vercel AI SDK: UI messages, the UI message stream and the chat protocol."""
