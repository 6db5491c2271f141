fn main() -> std::process::ExitCode {
    chainbox::cli::main()
}
