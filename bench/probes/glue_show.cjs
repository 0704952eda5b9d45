// Summarise a bench/workerd.mjs --only crossings result: node bench/probes/glue_show.cjs <results.json>
// (µs of workerd CPU per token for the 1,000-token cells, ms per request for the 10-token cell; one figure per round)
const r=require(process.argv[2]).crossings;
for (const [k,v] of Object.entries(r)) { if(k==="loops"){for(const [l,x] of Object.entries(v)) console.log(l, x.map(y=>y.usPerCall.toFixed(2)+"us st"+y.status).join(" ")); continue;}
 console.log(k, Object.entries(v).map(([c,xs])=>c+": "+xs.map(x=>(c.startsWith("10/")? (x.cpuMs/x.requests).toFixed(2)+"ms/req":(x.cpuMs*1000/x.tokens).toFixed(0)+"us/tok")+(x.failed?" FAIL"+x.failed:"")+" b"+x.bytesOut).join(",")).join(" | "));}
