use clap::Parser;
use loadgen::cli::{Args, Config};
use loadgen::output;
use loadgen::run::{run, RunError};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("loadgen: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(e.kind(), DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // clap's first line names the problem; keep it to one line
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            return usage_error(&format!("{first} (see loadgen --help)"));
        }
    };
    let die = args.die_with_parent || std::env::var("LOADGEN_DIE_WITH_PARENT").is_ok_and(|v| v == "1");
    if die {
        if let Err(e) = loadgen::signals::die_with_parent() {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
    }
    let cfg = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    let json_to_stdout = cfg.output.json.as_deref() == Some("-");
    let show_progress = !cfg.output.quiet && std::io::stderr().is_terminal();
    loadgen::signals::install();
    let result = match run(&cfg, show_progress) {
        Ok(r) => r,
        Err(RunError::Usage(e)) => return usage_error(&e),
        Err(RunError::Fatal(e)) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
    };
    let summary = output::summary_text(&cfg, &result);
    if json_to_stdout {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    if let Some(path) = &cfg.output.json {
        let doc = output::result_json(&cfg, &result);
        let text = serde_json::to_string_pretty(&doc).expect("JSON values serialize");
        let written = if json_to_stdout {
            let mut o = std::io::stdout().lock();
            writeln!(o, "{text}")
        } else {
            std::fs::write(path, text + "\n")
        };
        if let Err(e) = written {
            eprintln!("loadgen: cannot write --json {path}: {e}");
            return ExitCode::from(1);
        }
    }
    if result.interrupted {
        // the shell's convention for a run ended by a signal; the JSON is written
        return ExitCode::from(130);
    }
    ExitCode::SUCCESS
}
