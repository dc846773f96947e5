from console_client.mcp import main

main()
